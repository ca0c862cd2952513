#!/usr/bin/env bash
# scripts/bench_table.py on two hand-written bench lines per problem: the row's cells, the ratios
# against the peers, the comparison column, the stream floor's column, the backend under its old and
# new name, the kernel column, the run header from a sidecar, and a clear error for input it cannot
# use; MoE lines' own table; then scripts/results_tables.sh: regeneration, --check, --take, and a
# sidecar written ahead of its first run.
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

python3 "$script" "$work/bench.jsonl" --compare nolabel >/dev/null 2>"$work/err" && fail "--compare without '=' was accepted"
grep -q "LABEL=FILE" "$work/err" || fail "--compare error does not say the form: $(cat "$work/err")"
python3 "$script" --backend cpu "$work/bench.jsonl" >/dev/null 2>"$work/err" && fail "a backend with no lines was accepted"
grep -q "no 'cpu' lines" "$work/err" || fail "missing-backend error: $(cat "$work/err")"

# A run made under the backend's old name (cuda_decode), and a comparison run made under it, read alike.
sed 's/"cuda_nvfp4"/"cuda_decode"/' "$work/bench.jsonl" > "$work/renamed.jsonl"
sed 's/"cuda_nvfp4"/"cuda_decode"/' "$work/off.jsonl" > "$work/renamed-off.jsonl"
out=$(python3 "$script" "$work/renamed.jsonl" --compare "PDL off=$work/renamed-off.jsonl") || fail "exit status with the old name $?"
grep -qF '| N×K | M | cuda_decode µs | PDL off |' <<< "$out" || fail "header under the old name: $out"
grep -qF '| 4096×4096 | 1 | 4.0 | 5.0 | 2.0 | 0.50 | 12.0 | 6.0 | 3.00× | 1.50× |' <<< "$out" || fail "row under the old name: $out"

# The kernel's short name, from the line's explanation, in its own column.
sed 's/"backend":"cuda_nvfp4",/"backend":"cuda_nvfp4","kernel":"mma.sync kernel (not wgmma: M < 33): 896 CTAs",/' \
  "$work/bench.jsonl" > "$work/kernel.jsonl"
out=$(python3 "$script" "$work/kernel.jsonl") || fail "exit status with a kernel $?"
grep -qF '| N×K | M | cuda_nvfp4 µs | kernel | roofline µs |' <<< "$out" || fail "kernel header: $out"
grep -qF '| 4096×4096 | 1 | 4.0 | mma.sync | 2.0 | 0.50 |' <<< "$out" || fail "kernel cell: $out"

# The header from a run sidecar: its fields, the device and ceilings from the lines, its comparison run.
sed 's/"backend":"cuda_nvfp4",/"backend":"cuda_nvfp4","device":"cuda:0: NVIDIA H200","bandwidth_gbps":4245.6,"compute_tflops":814.37,/' \
  "$work/bench.jsonl" > "$work/h200.jsonl"
cat > "$work/h200.run.json" <<'JSON'
{"title": "A test table", "date": "2026-12-02", "commit": "abc1234", "command": "fp4gemm bench -m 1,16",
 "note": "a note", "compare": {"PDL off": "off.jsonl"}}
JSON
out=$(python3 "$script" --run "$work/h200.run.json" "$work/h200.jsonl") || fail "exit status with a sidecar $?"
grep -qxF '# A test table' <<< "$out" || fail "title: $out"
grep -qF -- '- **Measured:** 2026-12-02, commit `abc1234`, on cuda:0: NVIDIA H200' <<< "$out" || fail "measured line: $out"
grep -qF -- '- **Command:** `fp4gemm bench -m 1,16`' <<< "$out" || fail "command line: $out"
grep -qF '4246 GB/s, 814 TFLOP/s' <<< "$out" || fail "ceilings: $out"
grep -qF -- '- **Note:** a note' <<< "$out" || fail "note: $out"
grep -qF 'h200.jsonl, off.jsonl' <<< "$out" || fail "sources: $out"
grep -qF '| 4096×4096 | 1 | 4.0 | 5.0 | 2.0 |' <<< "$out" || fail "sidecar's comparison column: $out"
echo '{"title": "t", "date": "2026-12-02", "command": "c"}' > "$work/bad.run.json"
python3 "$script" --run "$work/bad.run.json" "$work/bench.jsonl" >/dev/null 2>"$work/err" && fail "a sidecar without a commit was accepted"
grep -q "lacks commit" "$work/err" || fail "sidecar error: $(cat "$work/err")"

# results_tables.sh: writes NAME.md, --check finds it current and then a hand edit, --take updates the sidecar.
tables="$(dirname "$script")/results_tables.sh"
results="$work/results"; mkdir -p "$results"
cp "$work/h200.jsonl" "$work/h200.run.json" "$work/off.jsonl" "$results/"
RESULTS_DIR="$results" bash "$tables" >/dev/null || fail "results_tables exit status $?"
[ "$(cat "$results/h200.md")" = "$out" ] || fail "h200.md is not bench_table's output: $(cat "$results/h200.md")"
RESULTS_DIR="$results" bash "$tables" --check 2>/dev/null || fail "--check on fresh tables failed"
echo "edited" >> "$results/h200.md"
RESULTS_DIR="$results" bash "$tables" --check 2>/dev/null && fail "--check passed a hand-edited table"
line cuda_decode 1 3.5 > "$work/fresh-off.jsonl"
COMMIT=def5678 RESULTS_DIR="$results" bash "$tables" --take h200 "$work/kernel.jsonl" "$work/fresh-off.jsonl" >/dev/null ||
  fail "--take exit status $?"
grep -qF "commit \`def5678\`, on" "$results/h200.md" || fail "--take commit: $(head -3 "$results/h200.md")"
grep -qF -- "- **Measured:** $(date -u +%F)," "$results/h200.md" || fail "--take date: $(head -3 "$results/h200.md")"
grep -qF '| 4096×4096 | 1 | 4.0 | mma.sync | 3.5 |' "$results/h200.md" || fail "--take tables: $(cat "$results/h200.md")"

# MoE lines (bench --moe --json): their own table, ours whichever backend served, the peers' ratios,
# – for a peer whose row is not ok; the header from the MoE lines alone.
moe_line() {  # backend peer tokens active ok [time_us roofline_us times_roofline]
  local timed=""
  [ "$5" = true ] && timed=",\"time_us\":$6,\"roofline_us\":$7,\"times_roofline\":$8"
  printf '{"moe":true,"device":"cuda:0: NVIDIA H200","bandwidth_gbps":4245.6,"compute_tflops":814.37,"backend":"%s","peer":%s,"tokens":%s,"experts":512,"top_k":10,"hidden":4096,"intermediate":1024,"shared_intermediate":0,"active_experts":%s,"ok":%s%s}\n' \
    "$1" "$2" "$3" "$4" "$5" "$timed"
}
{
  moe_line cuda_moe false 1 10 true 20.0 16.5 1.2121
  moe_line cublas_bf16_grouped true 1 10 true 120.0 16.5 7.27
  moe_line cublaslt_fp8 true 1 10 false
  moe_line cuda_moe false 8 79 true 150.0 122.8 1.2215
  moe_line cublas_bf16_grouped true 8 79 true 690.0 122.8 5.6
  moe_line cublaslt_fp8 true 8 79 true 381.0 122.8 3.1
} > "$work/moe.jsonl"
out=$(python3 "$script" "$work/moe.jsonl") || fail "MoE exit status $?"
grep -qF '| tokens | active experts | backend | µs | roofline µs | × roofline | cublas_bf16_grouped µs | cublaslt_fp8 µs | vs BF16 grouped | vs FP8 |' <<< "$out" ||
  fail "MoE header: $out"
grep -qF '| 1 | 10 | cuda_moe | 20.0 | 16.5 | 1.21 | 120.0 | – | 6.00× | – |' <<< "$out" || fail "MoE T = 1 row: $out"
grep -qF '| 8 | 79 | cuda_moe | 150.0 | 122.8 | 1.22 | 690.0 | 381.0 | 4.60× | 2.54× |' <<< "$out" || fail "MoE T = 8 row: $out"
grep -qF 'N×K' <<< "$out" && fail "an MoE-only file printed a GEMM table: $out"
# Router lines ("routing": "router", the whole layer routed by its own router) add two columns
# beside ours; a token count without one shows –.
{
  cat "$work/moe.jsonl"
  moe_line cuda_moe false 1 10 true 23.0 17.4 1.3218 | sed 's/"peer":false/"peer":false,"routing":"router"/'
} > "$work/moe-routed.jsonl"
out=$(python3 "$script" "$work/moe-routed.jsonl") || fail "MoE with a router line: exit status $?"
grep -qF '| tokens | active experts | backend | µs | roofline µs | × roofline | with router µs | × its roofline | cublas_bf16_grouped µs |' <<< "$out" ||
  fail "MoE header with a router line: $out"
grep -qF '| 1 | 10 | cuda_moe | 20.0 | 16.5 | 1.21 | 23.0 | 1.32 | 120.0 | – | 6.00× | – |' <<< "$out" || fail "MoE T = 1 row with its router line: $out"
grep -qF '| 8 | 79 | cuda_moe | 150.0 | 122.8 | 1.22 | – | – | 690.0 |' <<< "$out" || fail "MoE T = 8 row without a router line: $out"
cat > "$work/moe.run.json" <<'JSON'
{"title": "An MoE table", "date": "2026-12-05", "commit": "abc1234", "command": "fp4gemm bench --moe --json"}
JSON
out=$(python3 "$script" --run "$work/moe.run.json" "$work/moe.jsonl") || fail "MoE exit status with a sidecar $?"
grep -qF -- '- **Measured:** 2026-12-05, commit `abc1234`, on cuda:0: NVIDIA H200' <<< "$out" || fail "MoE measured line: $out"
grep -qF '4246 GB/s, 814 TFLOP/s' <<< "$out" || fail "MoE ceilings: $out"
# A sidecar written ahead of its first run is skipped (no table without a measurement) until --take brings its lines.
moe_results="$work/moe-results"; mkdir -p "$moe_results"
sed 's/"date": "2026-12-05", "commit": "abc1234"/"date": "", "commit": ""/' "$work/moe.run.json" > "$moe_results/h200-moe.run.json"
RESULTS_DIR="$moe_results" bash "$tables" 2>"$work/err" >/dev/null || fail "results_tables with a sidecar ahead of its run: $(cat "$work/err")"
[ -e "$moe_results/h200-moe.md" ] && fail "a table was written without a measurement"
grep -qF 'h200-moe.run.json has no h200-moe.jsonl yet' "$work/err" || fail "skip message: $(cat "$work/err")"
RESULTS_DIR="$moe_results" bash "$tables" --check 2>/dev/null || fail "--check failed on a sidecar ahead of its run"
COMMIT=fed4321 RESULTS_DIR="$moe_results" bash "$tables" --take h200-moe "$work/moe.jsonl" >/dev/null 2>&1 || fail "MoE --take exit status $?"
grep -qF "commit \`fed4321\`, on cuda:0" "$moe_results/h200-moe.md" || fail "MoE --take header: $(head -4 "$moe_results/h200-moe.md" 2>&1)"
grep -qF '| 8 | 79 | cuda_moe | 150.0 | 122.8 | 1.22 | 690.0 | 381.0 | 4.60× | 2.54× |' "$moe_results/h200-moe.md" || fail "MoE --take table"

if [ $failures -eq 0 ]; then echo "bench_table: all passed"; fi
exit $failures
