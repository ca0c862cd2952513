#!/usr/bin/env bash
# Session 21, call 3: stream-K grids of two CTAs per SM (sk2: the stream-K kernels bounded to 96
# registers by __launch_bounds__(threads, 2)) against the data-parallel grid and one CTA per SM.
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call3.tgz -C $r .; }
trap finish EXIT
start=$SECONDS
timeout 150 ./b/gpu_tests_sk2 --gtest_filter='CudaDecodeWgmma.*:CudaDecodeChainedCalls.*' > $r/tests-sk2.txt 2>&1; echo "tests rc=$? s=$((SECONDS-start))" >> $r/progress.txt
bench() {  # variant binary env shapes m
  timeout 90 env $3 ./b/$2 bench --backend cuda_decode --no-peers -m $5 --shapes $4 --json 2>>$r/err.txt | sed "s/^{/{\"variant\":\"$1\",/" >> $r/ab.jsonl
}
T=28672x8192,24576x4096,20480x4096,57344x8192
O=12288x4096,16384x4096,4096x12288,10240x8192
W=FP4GEMM_DECODE_KERNEL=wgmma
for rep in 1 2; do
  bench base fp4gemm X=1 $T 17,24,32,48,64
  bench base-s132 fp4gemm "$W FP4GEMM_WGMMA_STREAM=132" $T 17,24,32,48,64
  bench sk2-s264 fp4gemm_sk2 "$W FP4GEMM_WGMMA_STREAM=264" $T 17,24,32,48,64
  bench sk2-s198 fp4gemm_sk2 "$W FP4GEMM_WGMMA_STREAM=198" $T 32,64
  bench base fp4gemm X=1 $O 48,64
  bench sk2 fp4gemm_sk2 X=1 $O 48,64
  bench sk2-s264 fp4gemm_sk2 "$W FP4GEMM_WGMMA_STREAM=264" $O 48,64
  echo "rep $rep s=$((SECONDS-start))" >> $r/progress.txt
done
