#!/usr/bin/env bash
# Where a CUDA change stands, in one run on a GPU machine: the GPU tests, `explain` and the bench
# (peers in the same run) on the four issue-3 shapes, cuda_nvfp4 again with FP4GEMM_PDL=0 (the
# isolated-call cost), compute-sanitizer on the decode kernels, and the Markdown table of
# scripts/bench_table.py. Everything lands in OUT_DIR/results.tgz plus OUT_DIR/table.md (a lent GPU
# returns only a few files).
# Usage, from the repository root on the GPU machine:
#   scripts/gpu_check.sh BIN_DIR OUT_DIR      (BIN_DIR: fp4gemm, fp4gemm_gpu_tests, lib/; e.g. an
#                                             unpacked scripts/gpu_bundle.sh --archive)
# To make it bench/results/h200.md: unpack results.tgz, then
#   COMMIT=<built commit> scripts/results_tables.sh --take h200 bench.jsonl bench-pdl-off.jsonl
# Env: SHAPES ("N K" pairs, default the issue-3 four), MS (default 1,4,16,32,64), SANITIZE=0 skips
# the sanitizers (a few minutes). MOE=1 also runs bench --moe on the Qwen3.5-397B-A17B expert layer
# (E = 512, k = 10, H = 4096, I = 1024) at MOE_TOKENS (default 1,8,64,512,4096) with its GPU peers
# into bench-moe.jsonl and table-moe.md; bench/results/h200-moe.md is then
#   COMMIT=<built commit> scripts/results_tables.sh --take h200-moe bench-moe.jsonl
set -uo pipefail
bin=$(cd "${1:?folder with fp4gemm, fp4gemm_gpu_tests and lib/}" && pwd)
out=${2:?output folder}
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export LD_LIBRARY_PATH="$bin/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
status=0
note() { echo "gpu_check: $*"; }

nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > "$work/gpu.txt" 2>&1
note "$(cat "$work/gpu.txt")"
"$bin/fp4gemm_gpu_tests" --gtest_brief=1 > "$work/gpu-tests.txt" 2>&1 || { status=1; note "GPU tests FAILED"; }
note "GPU tests: $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$work/gpu-tests.txt" | tr '\n' ' ')"

shapes=${SHAPES:-"28672 8192;12288 4096;4096 12288;4096 4096"}
ms=${MS:-1,4,16,32,64}
IFS=';' read -ra pairs <<< "$shapes"
for pair in "${pairs[@]}"; do
  read -r n k <<< "$pair"
  for m in ${ms//,/ }; do
    "$bin/fp4gemm" explain -m "$m" -n "$n" -k "$k" 2>&1 | grep '^kernel:' | sed "s/^/${n}x${k} M=$m /" >> "$work/explain.txt"
  done
  "$bin/fp4gemm" bench -m "$ms" -n "$n" -k "$k" --json >> "$work/bench.jsonl" 2>> "$work/bench-stderr.txt" ||
    { status=1; note "bench ${n}x${k} FAILED"; }
  FP4GEMM_PDL=0 "$bin/fp4gemm" bench --backend cuda_nvfp4 --no-peers -m "$ms" -n "$n" -k "$k" --json \
    >> "$work/bench-pdl-off.jsonl" 2>> "$work/bench-stderr.txt" || { status=1; note "bench ${n}x${k} (PDL off) FAILED"; }
done
here=$(cd "$(dirname "$0")" && pwd)
python3 "$here/bench_table.py" "$work/bench.jsonl" --compare "PDL off=$work/bench-pdl-off.jsonl" > "$work/table.md" ||
  { status=1; note "no table"; }
cat "$work/table.md"

if [ "${MOE:-0}" = 1 ]; then
  "$bin/fp4gemm" bench --moe --experts 512 --topk 10 --hidden 4096 --intermediate 1024 --tokens "${MOE_TOKENS:-1,8,64,512,4096}" \
    --json > "$work/bench-moe.jsonl" 2>> "$work/bench-stderr.txt" || { status=1; note "bench --moe FAILED"; }
  python3 "$here/bench_table.py" "$work/bench-moe.jsonl" > "$work/table-moe.md" || { status=1; note "no MoE table"; }
  cat "$work/table-moe.md"
  cp "$work/table-moe.md" "$out/table-moe.md" 2>/dev/null
fi

if [ "${SANITIZE:-1}" != 0 ]; then
  sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  # Racecheck runs the prefill kernel (16 warps, a 200 KiB shared-memory ring) slowly: its two
  # large-shape tests took the whole run past 420 s on an H200,
  # so racecheck takes only its K-split test, which covers the same code on smaller shapes.
  declare -A skipped=([memcheck]='' [racecheck]=':CudaNvfp4Prefill.PrefillKernelMatchesTheReference:CudaNvfp4Prefill.PrefillKernelTakesEveryTypeAndStride')
  for tool in memcheck racecheck; do
    timeout 600 "$sanitizer" --tool "$tool" "$bin/fp4gemm_gpu_tests" --gtest_brief=1 \
      --gtest_filter="CudaNvfp4Launch*:CudaNvfp4Chained*:CudaNvfp4Wgmma*:CudaNvfp4Prefill*:-${skipped[$tool]}" \
      > "$work/$tool.txt" 2>&1 ||
      { status=1; note "$tool FAILED"; }
    note "$tool: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$work/$tool.txt" | tail -1)"
  done
fi

cp "$work/table.md" "$out/table.md" 2>/dev/null
tar czf "$out/results.tgz" -C "$work" .
note "results in $out/results.tgz ($(ls "$work" | tr '\n' ' '))"
exit $status
