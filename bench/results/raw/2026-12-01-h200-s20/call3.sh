#!/usr/bin/env bash
# Session 20, call 3: the stream-K contributor without per-thread fences (flag raised a round
# later). Its GPU tests, then wg / s132 at M = 17-64 on eleven weights (two repeats).
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call3.tgz -C $r .; }
trap finish EXIT
start=$SECONDS
timeout 150 ./b/fp4gemm_gpu_tests --gtest_brief=1 --gtest_filter='CudaDecodeWgmma.*:CudaDecodeChainedCalls.*' > $r/tests.txt 2>&1; echo "rc=$? s=$((SECONDS-start))" >> $r/tests.txt
echo "tests s=$((SECONDS-start))" >> $r/progress.txt
bench() {  # variant env shapes m
  timeout 120 env $2 ./b/fp4gemm bench --backend cuda_decode --no-peers -m $4 --shapes $3 --json 2>>$r/err.txt | sed "s/^{/{\"variant\":\"$1\",/" >> $r/ab.jsonl
}
S=4096x4096,4096x12288,12288x4096,28672x8192,8192x8192,6144x4096,10240x8192,16384x4096,14336x8192,5120x4096,24576x4096
for rep in 1 2; do
  bench wg FP4GEMM_DECODE_KERNEL=wgmma $S 17,24,32,48,64
  bench s132 "FP4GEMM_DECODE_KERNEL=wgmma FP4GEMM_WGMMA_STREAM=132" $S 17,24,32,48,64
  echo "rep $rep s=$((SECONDS-start))" >> $r/progress.txt
done
echo "done s=$((SECONDS-start))" >> $r/progress.txt
