#!/usr/bin/env bash
# Session 12, call 4 (same build as call 3, plus the GPU test FourWarpgroupCtasOfTwoRecordsMatchTheReference of the
# patch): sanitizers on the 4-warpgroup wgmma CTA, ncu of the wgmma kernel (1:1 rule vs 4:2), the issue-3 table with peers.
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
start=$SECONDS
cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
for tool in racecheck memcheck; do
  timeout 90 $cs --tool $tool ./b/fp4gemm_gpu_tests --gtest_filter='*FourWarpgroup*' > $OUT/$tool-four-warpgroups.txt 2>&1; echo "rc=$? s=$((SECONDS-start))" >> $OUT/$tool-four-warpgroups.txt
done
for nk in "4096 4096" "12288 4096" "4096 12288" "28672 8192"; do
  read -r n k <<< "$nk"
  ./b/fp4gemm bench -m 1,4,16,32,64 -n $n -k $k --json >> $OUT/table.jsonl 2>>$OUT/table-err.txt
done
for s in rule 4:2; do
  env_shape=""; [ $s != rule ] && env_shape="FP4GEMM_WGMMA_SHAPE=$s"
  timeout 120 env FP4GEMM_DECODE_KERNEL=wgmma $env_shape $ncu --clock-control none -k regex:wgmma_gemm_kernel -c 1 \
    --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --section Occupancy \
    ./b/fp4gemm bench --backend cuda_decode --no-peers -m 64 -n 12288 -k 4096 --json > $OUT/ncu-wgmma-${s/:/x}.txt 2>&1
done
