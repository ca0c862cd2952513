#!/usr/bin/env bash
# Where a CUDA change stands, in one run on a GPU machine. Each step runs under its own timeout and
# writes into OUT_DIR as it finishes, so a run cut short still returns everything done before
# (a lent GPU returns only what is under OUT_DIR, and only when the command ends).
# Steps (STEPS, comma-separated, default all but `old`):
#   tests     the GPU test binary (and the host binary's GPU runner tests when it is there)
#   decode    explain + bench with peers on the issue shapes at MS (default 1,4,16,32,64), and
#             cuda_nvfp4 again with FP4GEMM_PDL=0 (the isolated-call cost)
#   prefill   bench with peers at PREFILL_MS (default 256,512,1024,2048,4096,8192) on the issue
#             shapes and the expert-sized 2048x4096 and 4096x1024, then cuda_nvfp4 with each of its
#             two prefill kernels forced (prefill-kernel.jsonl, wide-kernel.jsonl: what auto chose between)
#   moe       bench --moe with peers on the default layer (Qwen3.5-397B-A17B experts) at MOE_TOKENS,
#             then ncu's per-kernel time of its T = 1 call (moe-kernels.csv, moe-routing-kernels.csv)
#   sanitize  compute-sanitizer memcheck and racecheck on the CUDA kernels' tests at small sizes
#   old       OLD_BIN's fp4gemm (a build of an earlier commit) benched on the decode shapes beside
# Usage, from the repository root on the GPU machine:
#   scripts/gpu_check.sh BIN_DIR OUT_DIR    (BIN_DIR: fp4gemm, fp4gemm_gpu_tests, lib/: an unpacked
#                                            scripts/gpu_bundle.sh --archive)
# Then: COMMIT=<built commit> scripts/results_tables.sh --take h200 decode.jsonl decode-pdl-off.jsonl
#       COMMIT=<built commit> scripts/results_tables.sh --take h200-moe moe.jsonl
#       COMMIT=<built commit> scripts/results_tables.sh --take h200-prefill prefill.jsonl
# Env: T_TESTS, T_BENCH (per shape), T_MOE, T_SAN (per tool and test group) in seconds; SHAPES ("N K;N K");
# OLD_BIN and OLD_BACKEND (default cuda_nvfp4; cuda_decode before the rename).
set -uo pipefail
bin=$(cd "${1:?folder with fp4gemm, fp4gemm_gpu_tests and lib/}" && pwd)
out=${2:?output folder}
mkdir -p "$out"
out=$(cd "$out" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
export LD_LIBRARY_PATH="$bin/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
log=$out/log.txt
steps=",${STEPS:-tests,decode,prefill,moe,sanitize},"
status=0
exec 3>&1  # the log also goes to the caller's stdout, whatever a step redirects
note() { echo "gpu_check: $*" | tee -a "$log" >&3; }
wants() { [[ $steps == *",$1,"* ]]; }
# step NAME LIMIT COMMAND...: runs it under `timeout`, logs rc and seconds; a failure marks the run.
step() {
  local name=$1 limit=$2 start=$SECONDS rc
  shift 2
  timeout "$limit" "$@"
  rc=$?
  note "$name: rc=$rc in $((SECONDS - start)) s$([ $rc = 124 ] && echo " (timed out at $limit s)")"
  [ $rc = 0 ] || status=1
}

note "$(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader 2>&1)"
shapes=${SHAPES:-"28672 8192;12288 4096;4096 12288;4096 4096"}
IFS=';' read -ra pairs <<< "$shapes"

if wants tests; then
  step gpu-tests "${T_TESTS:-300}" "$bin/fp4gemm_gpu_tests" --gtest_brief=1 > "$out/gpu-tests.txt" 2>&1
  if [ -x "$bin/fp4gemm_tests" ]; then
    step runner-gpu-tests 120 "$bin/fp4gemm_tests" --gtest_brief=1 --gtest_filter='GpuRunner*:*Gpu*' \
      >> "$out/gpu-tests.txt" 2>&1
  fi
  note "tests: $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$out/gpu-tests.txt" | tr '\n' ' ')"
fi

if wants decode; then
  ms=${MS:-1,4,16,32,64}
  for pair in "${pairs[@]}"; do
    read -r n k <<< "$pair"
    for m in ${ms//,/ } 256 4096; do
      "$bin/fp4gemm" explain -m "$m" -n "$n" -k "$k" 2>&1 | grep -E '^(choice|kernel|memory):' |
        sed "s/^/${n}x${k} M=$m /" >> "$out/explain.txt"
    done
    step "decode ${n}x${k}" "${T_BENCH:-120}" "$bin/fp4gemm" bench -m "$ms" -n "$n" -k "$k" --json \
      >> "$out/decode.jsonl" 2>> "$out/bench-stderr.txt"
    step "decode PDL off ${n}x${k}" "${T_BENCH:-120}" env FP4GEMM_PDL=0 "$bin/fp4gemm" bench --backend cuda_nvfp4 \
      --no-peers -m "$ms" -n "$n" -k "$k" --json >> "$out/decode-pdl-off.jsonl" 2>> "$out/bench-stderr.txt"
  done
  python3 "$here/bench_table.py" "$out/decode.jsonl" --compare "PDL off=$out/decode-pdl-off.jsonl" \
    > "$out/decode.md" 2>> "$out/bench-stderr.txt" || note "no decode table"
fi

if wants old && [ -n "${OLD_BIN:-}" ]; then
  old=$(cd "$OLD_BIN" && pwd)
  for pair in "${pairs[@]}"; do
    read -r n k <<< "$pair"
    step "old ${n}x${k}" "${T_BENCH:-120}" env LD_LIBRARY_PATH="$old/lib" "$old/fp4gemm" bench \
      --backend "${OLD_BACKEND:-cuda_nvfp4}" --no-peers -m "${MS:-1,4,16,32,64}" -n "$n" -k "$k" --json \
      >> "$out/old.jsonl" 2>> "$out/bench-stderr.txt"
  done
fi

if wants prefill; then
  prefill_ms=${PREFILL_MS:-256,512,1024,2048,4096,8192}
  for pair in "${pairs[@]}" "2048 4096" "4096 1024"; do
    read -r n k <<< "$pair"
    step "prefill ${n}x${k}" "${T_BENCH:-120}" "$bin/fp4gemm" bench -m "$prefill_ms" -n "$n" -k "$k" --json \
      >> "$out/prefill.jsonl" 2>> "$out/bench-stderr.txt"
    for kernel in prefill wide; do
      FP4GEMM_DECODE_KERNEL=$kernel step "$kernel kernel ${n}x${k}" "${T_BENCH:-120}" "$bin/fp4gemm" bench -m "$prefill_ms" \
        -n "$n" -k "$k" --backend cuda_nvfp4 --no-peers --json >> "$out/$kernel-kernel.jsonl" 2>> "$out/bench-stderr.txt"
    done
  done
  python3 "$here/bench_table.py" "$out/prefill.jsonl" > "$out/prefill.md" 2>> "$out/bench-stderr.txt" ||
    note "no prefill table"
fi

if wants moe; then
  # The GPU peers' own tests first: a peer that computes garbage must not be timed silently.
  step moe-peer-tests 120 "$bin/fp4gemm_gpu_tests" --gtest_brief=1 --gtest_filter='GpuMoePeers*' \
    > "$out/moe-peer-tests.txt" 2>&1
  # Needs about 20 GB of device memory at T = 4096 (the BF16 peer's copies of the touched experts).
  step moe "${T_MOE:-300}" "$bin/fp4gemm" bench --moe --experts 512 --topk 10 --hidden 4096 --intermediate 1024 \
    --tokens "${MOE_TOKENS:-1,8,64,512,1024,4096}" --json > "$out/moe.jsonl" 2>> "$out/bench-stderr.txt"
  python3 "$here/bench_table.py" "$out/moe.jsonl" > "$out/moe.md" 2>> "$out/bench-stderr.txt" || note "no MoE table"
  # Where T = 1's time goes, per kernel (ncu, cold caches, the clocks left alone): the layer's own
  # kernels on the first given-routing calls, then the routing kernels of the router row.
  ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
  if [ -x "$ncu" ]; then
    metrics=gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,launch__grid_size,launch__registers_per_thread,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum
    layer=(--moe --experts 512 --topk 10 --hidden 4096 --intermediate 1024 --no-peers --tokens 1)
    step moe-kernels 120 "$ncu" --clock-control none --csv --page raw --metrics "$metrics" --launch-count 12 \
      -k 'regex:expert_kernel|permute|combine_kernel' "$bin/fp4gemm" bench "${layer[@]}" > "$out/moe-kernels.csv" 2>> "$out/bench-stderr.txt"
    step moe-routing-kernels 120 "$ncu" --clock-control none --csv --page raw --metrics "$metrics" --launch-count 4 \
      -k 'regex:router_logits|top_k' "$bin/fp4gemm" bench "${layer[@]}" > "$out/moe-routing-kernels.csv" 2>> "$out/bench-stderr.txt"
  else
    note "no ncu: the MoE layer's per-kernel times are not taken"
  fi
fi

if wants sanitize; then
  sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  # Each group under its own timeout, its output line-buffered (stdbuf) so a group cut short still
  # shows the tests it finished. Racecheck runs the prefill kernel (16 warps, a 200 KiB
  # shared-memory ring) slowly: its two large-shape tests took a run past 420 s on an H200, so
  # racecheck takes only its K-split test, which covers the same code on smaller shapes; and the
  # nvfp4 group alone took more than 160 s.
  groups=(moe 'CudaMoe*:CudaDequantSlices*'
          nvfp4 'CudaNvfp4Launch*:CudaNvfp4Chained*:CudaNvfp4Wgmma*:CudaNvfp4Prefill*:CudaNvfp4Wide*')
  race_skipped='CudaNvfp4Prefill.PrefillKernelMatchesTheReference:CudaNvfp4Prefill.PrefillKernelTakesEveryTypeAndStride:CudaNvfp4Wide.WideKernelMatchesTheReference'
  for tool in memcheck racecheck; do
    for ((g = 0; g < ${#groups[@]}; g += 2)); do
      name=${groups[g]} filter=${groups[g + 1]}
      [ "$tool/$name" = racecheck/nvfp4 ] && filter="$filter:-$race_skipped"
      step "$tool $name" "${T_SAN:-300}" stdbuf -oL "$sanitizer" --tool "$tool" "$bin/fp4gemm_gpu_tests" \
        --gtest_filter="$filter" > "$out/$tool-$name.txt" 2>&1
      note "$tool $name: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$out/$tool-$name.txt" | tail -1)" \
           "$(grep -c '^\[       OK' "$out/$tool-$name.txt") tests passed"
    done
  done
fi

note "done, rc=$status; in $out: $(ls "$out" | tr '\n' ' ')"
exit $status
