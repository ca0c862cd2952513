#!/usr/bin/env bash
# Session 20, call 1: the stream-K grid of the wgmma kernel. Its GPU tests (and the chained-calls
# test), an A/B/C of rule / wgmma data-parallel / stream-K over 132 CTAs at M = 17-64 on eleven
# weights (two repeats), then compute-sanitizer memcheck and racecheck on the stream-K test.
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call1.tgz -C $r .; }
trap finish EXIT
start=$SECONDS
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.sm,driver_version --format=csv > $r/gpu.txt 2>&1
timeout 150 ./b/fp4gemm_gpu_tests --gtest_brief=1 --gtest_filter='CudaDecodeWgmma.*:CudaDecodeChainedCalls.*' > $r/tests.txt 2>&1; echo "rc=$? s=$((SECONDS-start))" >> $r/tests.txt
echo "tests s=$((SECONDS-start))" >> $r/progress.txt
bench() {  # variant env shapes m
  timeout 120 env $2 ./b/fp4gemm bench --backend cuda_decode --no-peers -m $4 --shapes $3 --json 2>>$r/err.txt | sed "s/^{/{\"variant\":\"$1\",/" >> $r/ab.jsonl
}
S=4096x4096,4096x12288,12288x4096,28672x8192,8192x8192,6144x4096,10240x8192,16384x4096,14336x8192,5120x4096,24576x4096
for rep in 1 2; do
  bench rule X=1 $S 17,24,32,48,64
  bench wg FP4GEMM_DECODE_KERNEL=wgmma $S 17,24,32,48,64
  bench s132 "FP4GEMM_DECODE_KERNEL=wgmma FP4GEMM_WGMMA_STREAM=132" $S 17,24,32,48,64
  echo "rep $rep s=$((SECONDS-start))" >> $r/progress.txt
done
cs=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null || echo compute-sanitizer)
for tool in memcheck racecheck; do
  timeout 150 $cs --tool $tool --error-exitcode 9 ./b/fp4gemm_gpu_tests --gtest_brief=1 --gtest_filter='CudaDecodeWgmma.StreamK*' > $r/$tool.txt 2>&1
  echo "rc=$? s=$((SECONDS-start))" >> $r/$tool.txt
  echo "$tool s=$((SECONDS-start))" >> $r/progress.txt
done
echo "done s=$((SECONDS-start))" >> $r/progress.txt
