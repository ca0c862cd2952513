#!/usr/bin/env bash
# Session 24, call 7: the host test binary's GPU tests on the H200 (GpuRunner.*: auto with device
# operands, every CUDA backend's canary, now one per cuda_decode kernel) and the canary tests.
# Bundle: scripts/gpu_bundle.sh build-dev out-carry --host-tests --archive
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call7.tgz -C $r .; }
trap finish EXIT
start=$SECONDS
timeout 200 ./b/fp4gemm_tests --gtest_filter='GpuRunner.*:Canary*' > $r/host-gpu-tests.txt 2>&1; echo "tests rc=$? s=$((SECONDS-start))" >> $r/progress.txt
