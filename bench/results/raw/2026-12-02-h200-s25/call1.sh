#!/usr/bin/env bash
# Session 25, call 1: the tip (5e12563) on the device. The prefill tests first (the K = 384/448
# tails never ran), then the host binary's GPU tests (GpuRunner.*, Canary*), then
# scripts/gpu_check.sh: the whole GPU suite, the issue-3 bench with peers, PDL off, memcheck and
# racecheck. Bundle: scripts/gpu_bundle.sh build-dev out-carry --host-tests --archive
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call1.tgz -C $r .; }
trap finish EXIT
start=$SECONDS
timeout 60 ./b/fp4gemm_gpu_tests --gtest_filter='CudaDecodeWgmma.Prefill*' > $r/prefill-tests.txt 2>&1; echo "prefill rc=$? s=$((SECONDS-start))" >> $r/progress.txt
timeout 120 ./b/fp4gemm_tests --gtest_filter='GpuRunner.*:Canary*' > $r/host-gpu-tests.txt 2>&1; echo "host rc=$? s=$((SECONDS-start))" >> $r/progress.txt
MS=1,4,16,24,32,64 timeout 420 scripts/gpu_check.sh b $r/check > $r/gpu-check.txt 2>&1; echo "check rc=$? s=$((SECONDS-start))" >> $r/progress.txt
