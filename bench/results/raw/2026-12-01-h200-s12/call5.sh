#!/usr/bin/env bash
# Session 12, call 5: the wgmma kernel's stall reasons and tensor-pipe activity (12288x4096 M = 64: rule 1:1 and 4:2).
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
for s in rule 4:2; do
  env_shape=""; [ $s != rule ] && env_shape="FP4GEMM_WGMMA_SHAPE=$s"
  timeout 100 env FP4GEMM_DECODE_KERNEL=wgmma $env_shape $ncu --clock-control none -k regex:wgmma_gemm_kernel -c 1 \
    --metrics 'regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio$,regex:sm__pipe_tensor.*cycles_active\.avg\.pct_of_peak_sustained_active$,regex:sm__inst_executed_pipe_.*\.avg\.pct_of_peak_sustained_active$,smsp__inst_executed.sum,sm__cycles_active.avg' \
    ./b/fp4gemm bench --backend cuda_decode --no-peers -m 64 -n 12288 -k 4096 --json > $OUT/ncu-stalls-${s/:/x}.txt 2>&1
  echo "ncu $s rc=$?" >> $OUT/progress.txt
done
