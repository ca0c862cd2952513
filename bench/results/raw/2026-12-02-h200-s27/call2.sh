#!/usr/bin/env bash
# Session 27, call 2: the staged mma.sync kernel's GPU tests (and memcheck / racecheck on one
# size each), then every compiled staged shape forced against the rule on issue and model weights,
# M = 16-64.
# Bundle: scripts/gpu_bundle.sh build-dev out-carry --archive
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call2.tgz -C $r .; }
trap finish EXIT
start=$SECONDS
timeout 150 ./b/fp4gemm_gpu_tests --gtest_filter='CudaDecodeStaged.*' > $r/staged-test.txt 2>&1; echo "staged-test rc=$? s=$((SECONDS-start))" >> $r/progress.txt
w=4096x4096,12288x4096,4096x12288,28672x8192,6144x4096,4608x3584
run() { local tag=$1; shift; env "$@" timeout 100 ./b/fp4gemm bench --backend cuda_decode --no-peers -m 16,24,32,48,64 --shapes $w --json 2>>$r/bench.err | sed "s/^{/{\"shape\":\"$tag\",/" >> $r/sweep.jsonl; echo "$tag rc=$? s=$((SECONDS-start))" >> $r/progress.txt; }
run rule FP4GEMM_UNUSED=1
for s in 4:2:4 8:1:4 4:1:4 2:2:4 2:4:4 4:4:4; do run "staged-$s" FP4GEMM_DECODE_KERNEL=staged FP4GEMM_STAGED_SHAPE=$s; done
run staged-4:4:3 FP4GEMM_DECODE_KERNEL=staged FP4GEMM_STAGED_SHAPE=4:4:3
timeout 100 compute-sanitizer --tool memcheck ./b/fp4gemm_gpu_tests --gtest_filter='CudaDecodeStaged.OddActivation*' > $r/memcheck.txt 2>&1; echo "memcheck rc=$? s=$((SECONDS-start))" >> $r/progress.txt
timeout 100 compute-sanitizer --tool racecheck ./b/fp4gemm_gpu_tests --gtest_filter='CudaDecodeStaged.OddActivation*' > $r/racecheck.txt 2>&1; echo "racecheck rc=$? s=$((SECONDS-start))" >> $r/progress.txt
