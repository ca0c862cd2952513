#!/usr/bin/env bash
# scripts/bench_table.py on two hand-written bench lines per problem: the row's cells, the ratios
# against the peers, the comparison column, the stream floor's column, and a clear error for input
# it cannot use.
set -uo pipefail
script=${BENCH_TABLE:?path to scripts/bench_table.py}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

line() {  # backend m time_us [roofline_us]
  printf '{"backend":"%s","peer":false,"m":%s,"n":4096,"k":4096,"ok":true,"time_us":%s,"roofline_us":%s,"roofline_fraction":%s}\n' \
    "$1" "$2" "$3" "${4:-2.0}" "$(python3 -c "print(${4:-2.0} / $3)")"
}
{
  echo "warning: not JSON, skipped"
  line cuda_nvfp4 1 4.0
  line cublas_bf16 1 12.0
  line cublaslt_fp8 1 6.0
  line cuda_nvfp4 16 5.0
  line cublas_bf16 16 10.0
} > "$work/bench.jsonl"
line cuda_nvfp4 1 5.0 > "$work/off.jsonl"

out=$(python3 "$script" "$work/bench.jsonl" --compare "PDL off=$work/off.jsonl") || fail "exit status $?"
grep -qF '| N×K | M | cuda_nvfp4 µs | PDL off | roofline µs | fraction | cublas_bf16 µs | cublaslt_fp8 µs | vs BF16 | vs FP8 |' <<< "$out" ||
  fail "header: $out"
grep -qF '| 4096×4096 | 1 | 4.0 | 5.0 | 2.0 | 0.50 | 12.0 | 6.0 | 3.00× | 1.50× |' <<< "$out" || fail "M = 1 row: $out"
grep -qF '| 4096×4096 | 16 | 5.0 | – | 2.0 | 0.40 | 10.0 | – | 2.00× | – |' <<< "$out" || fail "M = 16 row: $out"

# With a stream floor in the run: its time over ours, after the fraction (– where it is missing).
{ cat "$work/bench.jsonl"; line stream_floor 1 3.0; } > "$work/floor.jsonl"
out=$(python3 "$script" "$work/floor.jsonl") || fail "exit status with a floor $?"
grep -qF '| roofline µs | fraction | floor / time | cublas_bf16 µs | cublaslt_fp8 µs | stream_floor µs |' <<< "$out" ||
  fail "floor header: $out"
grep -qF '| 4096×4096 | 1 | 4.0 | 2.0 | 0.50 | 0.75 | 12.0 | 6.0 | 3.0 | 3.00× | 1.50× |' <<< "$out" || fail "floor row: $out"
grep -qF '| 4096×4096 | 16 | 5.0 | 2.0 | 0.40 | – | 10.0 | – | – | 2.00× | – |' <<< "$out" || fail "row without a floor: $out"

# Lines of an older run name the backend cuda_decode: read as cuda_nvfp4.
sed 's/"cuda_nvfp4"/"cuda_decode"/' "$work/bench.jsonl" > "$work/renamed.jsonl"
out=$(python3 "$script" "$work/renamed.jsonl") || fail "exit status on renamed lines $?"
grep -qF '| 4096×4096 | 1 | 4.0 | 2.0 | 0.50 | 12.0 | 6.0 | 3.00× | 1.50× |' <<< "$out" || fail "renamed M = 1 row: $out"

python3 "$script" "$work/bench.jsonl" --compare nolabel >/dev/null 2>"$work/err" && fail "--compare without '=' was accepted"
grep -q "LABEL=FILE" "$work/err" || fail "--compare error does not say the form: $(cat "$work/err")"
python3 "$script" --backend cpu "$work/bench.jsonl" >/dev/null 2>"$work/err" && fail "a backend with no lines was accepted"
grep -q "no 'cpu' lines" "$work/err" || fail "missing-backend error: $(cat "$work/err")"

if [ $failures -eq 0 ]; then echo "bench_table: all passed"; fi
exit $failures
