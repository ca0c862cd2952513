#!/usr/bin/env bash
# Session 17, call 2: the register-bounded four-tile kernel (GPU suite, sanitizers, A/B against
# each weight's unbounded shape forced), and M = 25/32 on 10240/12288 x 8192 (wgmma 2:2 rule vs
# mma.sync forced).
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call2.tgz -C $r .; }
trap finish EXIT
start=$SECONDS
timeout 200 ./b/fp4gemm_gpu_tests --gtest_brief=1 > $r/gpu-tests.txt 2>&1; echo "rc=$? s=$((SECONDS-start))" >> $r/gpu-tests.txt
echo "gpu tests s=$((SECONDS-start))" >> $r/progress.txt
bench() {  # variant env shapes m
  timeout 100 env $2 ./b/fp4gemm bench --backend cuda_decode --no-peers -m $4 --shapes $3 --json 2>>$r/err.txt | sed "s/^{/{\"variant\":\"$1\",/" >> $r/ab.jsonl
}
for rep in 1 2; do
  bench rule X=1 4096x12288,4096x4096,4096x2048,3072x4096,5120x4096,12288x4096,2048x8192,6144x4096 25,32
  bench unbounded FP4GEMM_DECODE_SHAPE=2:4:1:0 4096x12288,4096x4096,4096x2048 25,32
  bench unbounded FP4GEMM_DECODE_SHAPE=1:4:1:0 3072x4096 25,32
  bench unbounded FP4GEMM_DECODE_SHAPE=1:8:1:0 5120x4096 25,32
  bench rule X=1 10240x8192,12288x8192 25,32
  bench mma FP4GEMM_DECODE_KERNEL=mma 10240x8192,12288x8192 25,32
done
echo "ab s=$((SECONDS-start))" >> $r/progress.txt
cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
timeout 120 $cs --tool memcheck --error-exitcode 9 ./b/fp4gemm_gpu_tests --gtest_brief=1 --gtest_filter='CudaDecodeLaunchShapes.EveryCompiledShape*' > $r/memcheck.txt 2>&1; echo "rc=$? s=$((SECONDS-start))" >> $r/memcheck.txt
timeout 120 $cs --tool racecheck --error-exitcode 9 ./b/fp4gemm_gpu_tests --gtest_brief=1 --gtest_filter='CudaDecodeLaunchShapes.EveryCompiledShape*' > $r/racecheck.txt 2>&1; echo "rc=$? s=$((SECONDS-start))" >> $r/racecheck.txt
echo "done s=$((SECONDS-start))" >> $r/progress.txt
