#!/usr/bin/env bash
# Session 25, call 2: the prefill kernel's K split (prefill_k_splits). Its tests (the forced-split
# test included), memcheck and racecheck on the split test, then the bench: the rule's split with
# cuBLAS BF16 and cuBLASLt FP8 beside it, and the same binary unsplit (FP4GEMM_PREFILL_SPLITS=1).
# Bundle: scripts/gpu_bundle.sh build-dev out-carry --archive
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call2.tgz -C $r .; }
trap finish EXIT
start=$SECONDS
timeout 90 ./b/fp4gemm_gpu_tests --gtest_filter='CudaDecodeWgmma.Prefill*' > $r/prefill-tests.txt 2>&1; rc=$?; echo "prefill rc=$rc s=$((SECONDS-start))" >> $r/progress.txt
[ $rc = 0 ] || exit 1
shapes=4096x4096,12288x4096,4096x12288,28672x8192
timeout 150 ./b/fp4gemm bench --backend cuda_decode -m 65,128,256,512 --shapes $shapes --json > $r/split.jsonl 2>> $r/err.txt; echo "bench split rc=$? s=$((SECONDS-start))" >> $r/progress.txt
FP4GEMM_PREFILL_SPLITS=1 timeout 100 ./b/fp4gemm bench --backend cuda_decode --no-peers -m 65,128,256,512 --shapes $shapes --json > $r/unsplit.jsonl 2>> $r/err.txt; echo "bench unsplit rc=$? s=$((SECONDS-start))" >> $r/progress.txt
timeout 120 compute-sanitizer --tool memcheck ./b/fp4gemm_gpu_tests --gtest_filter='CudaDecodeWgmma.PrefillKernelSplitsKAnyWay' > $r/memcheck.txt 2>&1; echo "memcheck rc=$? s=$((SECONDS-start))" >> $r/progress.txt
timeout 150 compute-sanitizer --tool racecheck ./b/fp4gemm_gpu_tests --gtest_filter='CudaDecodeWgmma.PrefillKernelSplitsKAnyWay' > $r/racecheck.txt 2>&1; echo "racecheck rc=$? s=$((SECONDS-start))" >> $r/progress.txt
for m in 65 128 256; do ./b/fp4gemm explain -m $m -n 28672 -k 8192 --backend cuda_decode 2>&1 | grep '^kernel:' >> $r/explain.txt; done
