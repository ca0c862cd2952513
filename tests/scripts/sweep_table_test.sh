#!/usr/bin/env bash
# scripts/sweep_table.py on hand-written tagged lines: a column per tag in first-seen order, the
# fastest forced tag over the rule, – for a failed line, skipped peers and noise, and a clear error
# for a file with no tagged lines.
set -uo pipefail
script=${SWEEP_TABLE:?path to scripts/sweep_table.py}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

line() {  # tag m time_us [ok]
  printf '{"shape":"%s","backend":"cuda_nvfp4","m":%s,"n":4096,"k":4096,"ok":%s,"time_us":%s}\n' "$1" "$2" "${4:-true}" "$3"
}
{
  echo "warning: not JSON, skipped"
  line rule 1 4.0
  line 1:8 1 5.0
  line 2:2 1 3.0
  line rule 16 6.0
  line 1:8 16 6.6
  line 2:2 16 0 false
  printf '{"shape":"rule","backend":"cublas_bf16","peer":true,"m":1,"n":4096,"k":4096,"ok":true,"time_us":9.0}\n'
} > "$work/sweep.jsonl"

out=$(python3 "$script" "$work/sweep.jsonl") || fail "exit status $?"
grep -qF '| N×K | M | rule | 1:8 | 2:2 | best / rule |' <<< "$out" || fail "header: $out"
grep -qF '| 4096×4096 | 1 | 4.00 | 5.00 | 3.00 | 0.75 (2:2) |' <<< "$out" || fail "M = 1 row: $out"
grep -qF '| 4096×4096 | 16 | 6.00 | 6.60 | – | 1.10 (1:8) |' <<< "$out" || fail "M = 16 row (a failed line): $out"
[ "$(grep -c '^| 4096' <<< "$out")" = 2 ] || fail "the peer's line made a row: $out"

echo "nothing tagged" > "$work/empty.jsonl"
python3 "$script" "$work/empty.jsonl" >/dev/null 2>"$work/err" && fail "a file without tagged lines was accepted"
grep -q "no tagged cuda_nvfp4 lines" "$work/err" || fail "error text: $(cat "$work/err")"

[ "$failures" = 0 ] && echo "sweep_table: all checks passed"
exit "$failures"
