#!/usr/bin/env bash
# Session 16, call 9 (the final tree, after review): the whole GPU suite; compute-sanitizer memcheck
# and racecheck on the mma.sync kernel at every compiled shape (now with three tiles); the wgmma
# rule on the 6657-8191-row band it now takes at M = 17-32 (unmeasured before), against mma.sync;
# three-tile row pairs on 13312x8192 against 1x4.
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call9.tgz -C $r .; }
trap finish EXIT
start=$SECONDS
timeout 200 ./b/fp4gemm_gpu_tests --gtest_brief=1 > $r/gpu-tests.txt 2>&1; echo "rc=$? s=$((SECONDS-start))" >> $r/gpu-tests.txt
S=6912x4096,7168x4096,7168x8192,7680x8192,13312x8192
for kernel in rule mma wgmma; do
  extra=""; [ $kernel != rule ] && extra="FP4GEMM_DECODE_KERNEL=$kernel"
  timeout 100 env $extra ./b/fp4gemm bench --backend cuda_decode --no-peers -m 17,24,32 --shapes $S --json 2>>$r/err.txt \
    | sed "s/^{/{\"variant\":\"$kernel\",/" >> $r/band.jsonl
done
timeout 60 env FP4GEMM_DECODE_KERNEL=mma FP4GEMM_DECODE_SHAPE=1:4 ./b/fp4gemm bench --backend cuda_decode --no-peers -m 20,24 --shapes 13312x8192 --json 2>>$r/err.txt \
  | sed 's/^{/{"variant":"mma-1:4",/' >> $r/band.jsonl
echo "bench s=$((SECONDS-start))" >> $r/progress.txt
cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
timeout 120 $cs --tool memcheck --error-exitcode 9 ./b/fp4gemm_gpu_tests --gtest_brief=1 --gtest_filter='CudaDecodeLaunchShapes.EveryCompiledShape*' > $r/memcheck.txt 2>&1; echo "rc=$? s=$((SECONDS-start))" >> $r/memcheck.txt
timeout 120 $cs --tool racecheck --error-exitcode 9 ./b/fp4gemm_gpu_tests --gtest_brief=1 --gtest_filter='CudaDecodeLaunchShapes.EveryCompiledShape*' > $r/racecheck.txt 2>&1; echo "rc=$? s=$((SECONDS-start))" >> $r/racecheck.txt
echo "done s=$((SECONDS-start))" >> $r/progress.txt
