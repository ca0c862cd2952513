#!/usr/bin/env bash
# Session 12, call 3 (build: 49ddd37 + wgmma-four-warpgroups.patch): wgmma CTAs of 4 warpgroups (256 rows, two
# records): GPU tests, then a shape sweep at M = 32, 64.
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
start=$SECONDS
timeout 150 ./b/fp4gemm_gpu_tests --gtest_brief=1 --gtest_filter='CudaDecodeWgmma.*' > $OUT/gpu-tests-wgmma.txt 2>&1; echo "rc=$? s=$((SECONDS-start))" >> $OUT/gpu-tests-wgmma.txt
sweep() {  # n k
  ./b/fp4gemm bench --backend cuda_decode --no-peers -m 32,64 -n $1 -k $2 --json 2>>$OUT/err.txt | sed 's/^{/{"shape":"rule",/' >> $OUT/sweep.jsonl
  for s in 4:1 4:2 4:4 4:8 2:2; do
    FP4GEMM_DECODE_KERNEL=wgmma FP4GEMM_WGMMA_SHAPE=$s ./b/fp4gemm bench --backend cuda_decode --no-peers -m 32,64 -n $1 -k $2 --json 2>>$OUT/err.txt | sed "s/^{/{\"shape\":\"$s\",/" >> $OUT/sweep.jsonl
  done
}
sweep 12288 4096; sweep 28672 8192; sweep 4096 12288; sweep 4096 4096; sweep 8192 8192
timeout 200 ./b/fp4gemm_gpu_tests --gtest_brief=1 --gtest_filter='-CudaDecodeWgmma.*' > $OUT/gpu-tests-rest.txt 2>&1; echo "rc=$? s=$((SECONDS-start))" >> $OUT/gpu-tests-rest.txt
