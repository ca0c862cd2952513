#!/usr/bin/env bash
# Session 27, call 3: the register kernel with its three- and four-tile weight chunks through a
# per-warp cp.async ring in shared memory (decode_async_weights.cuh) against the build before it
# (b/fp4gemm_base, session 26's kernels), mma.sync forced at the rule's shape and at other shapes,
# M = 17-32; the launch-shape GPU test, and memcheck / racecheck on part of it.
# Bundle: scripts/gpu_bundle.sh build-dev out-carry --archive, plus the base binary.
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
gunzip -c out-carry/fp4gemm_base.gz > b/fp4gemm_base; chmod +x b/fp4gemm_base
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call3.tgz -C $r .; }
trap finish EXIT
start=$SECONDS
timeout 120 ./b/fp4gemm_gpu_tests --gtest_filter='CudaDecodeLaunchShapes.*:CudaDecodeChained*' > $r/launch-shapes-test.txt 2>&1; echo "shapes-test rc=$? s=$((SECONDS-start))" >> $r/progress.txt
w=4096x4096,12288x4096,4096x12288,28672x8192,6144x4096,8192x8192,16384x4096,4608x3584,3584x18944
run() { local tag=$1 bin=$2; shift 2; env "$@" timeout 100 ./b/$bin bench --backend cuda_decode --no-peers -m 17,24,25,32 --shapes $w --json 2>>$r/bench.err | sed "s/^{/{\"shape\":\"$tag\",/" >> $r/sweep.jsonl; echo "$tag rc=$? s=$((SECONDS-start))" >> $r/progress.txt; }
run rule fp4gemm FP4GEMM_UNUSED=1
run base-mma fp4gemm_base FP4GEMM_DECODE_KERNEL=mma
run async-mma fp4gemm FP4GEMM_DECODE_KERNEL=mma
run base-rule fp4gemm_base FP4GEMM_UNUSED=1
for s in 2:2 2:4 1:8 1:4; do run "async-$s" fp4gemm FP4GEMM_DECODE_KERNEL=mma FP4GEMM_DECODE_SHAPE=$s; done
timeout 60 compute-sanitizer --tool memcheck ./b/fp4gemm_gpu_tests --gtest_filter='CudaDecodeChained*' > $r/memcheck.txt 2>&1; echo "memcheck rc=$? s=$((SECONDS-start))" >> $r/progress.txt
timeout 60 compute-sanitizer --tool racecheck ./b/fp4gemm_gpu_tests --gtest_filter='CudaDecodeChained*' > $r/racecheck.txt 2>&1; echo "racecheck rc=$? s=$((SECONDS-start))" >> $r/progress.txt
