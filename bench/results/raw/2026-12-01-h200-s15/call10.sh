#!/usr/bin/env bash
# Session 15, call 10 (the final tree): the whole GPU suite, and cuda_decode (paired split from 64 chunks)
# against dequantize + cuBLAS where the auto row moved (K = 4096 from 6144 rows) and just below it.
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call10.tgz -C $r .; }
trap finish EXIT
start=$SECONDS
timeout 250 ./b/fp4gemm_gpu_tests --gtest_brief=1 > $r/gpu-tests.txt 2>&1; echo "rc=$? s=$((SECONDS-start))" >> $r/gpu-tests.txt
shapes=5120x4096,6144x4096,7168x4096,8192x4096,6144x6144
for b in cuda_decode cuda_dequant_cublas; do
  timeout 100 ./b/fp4gemm bench --backend $b --no-peers -m 33,48,64 --shapes $shapes --json > $r/auto-$b.jsonl 2>>$r/err.txt
done
echo "done s=$((SECONDS-start))" >> $r/progress.txt
