#!/usr/bin/env bash
# Session 28, call 3: weight-tile pairs for three and four activation tiles (M = 17-32): each
# activation load serves two weight tiles, half the activation loads per weight byte, at 159-171
# registers (8-12 warps per SM instead of 12-16). The launch-shape GPU test (every compiled shape
# against the CPU reference), then the pairs forced against the rule and against the rule's
# single-tile mma.sync shapes, M = 17, 24, 25, 32, eight weights, twice, ABAB.
# Bundle: scripts/gpu_bundle.sh build-dev out-carry --archive
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call3.tgz -C $r .; }
trap finish EXIT
start=$SECONDS
timeout 120 ./b/fp4gemm_gpu_tests --gtest_filter='CudaDecodeLaunchShapes.*' > $r/launch-shapes-test.txt 2>&1; echo "shapes-test rc=$? s=$((SECONDS-start))" >> $r/progress.txt
w=4096x4096,12288x4096,4096x12288,28672x8192,6144x4096,8192x8192,16384x4096,4608x3584
run() { local tag=$1; shift; env "$@" timeout 100 ./b/fp4gemm bench --backend cuda_decode --no-peers -m 17,24,25,32 --shapes $w --json 2>>$r/bench.err | sed "s/^{/{\"shape\":\"$tag\",/" >> $r/sweep.jsonl; echo "$tag rc=$? s=$((SECONDS-start))" >> $r/progress.txt; }
for pass in 1 2; do
  run rule$pass
  run mma$pass FP4GEMM_DECODE_KERNEL=mma
  for s in 1:8:2 1:4:2 2:2:2; do run pair-$s-$pass FP4GEMM_DECODE_KERNEL=mma FP4GEMM_DECODE_SHAPE=$s; done
done
