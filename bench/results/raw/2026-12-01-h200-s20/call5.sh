#!/usr/bin/env bash
# Session 20, call 5: after the review refactor (the segment computed once per walk, the slot size
# from one function), the wgmma and chained-calls GPU tests, and the stream-K rows once more.
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call5.tgz -C $r .; }
trap finish EXIT
start=$SECONDS
timeout 150 ./b/fp4gemm_gpu_tests --gtest_brief=1 --gtest_filter='CudaDecodeWgmma.*:CudaDecodeChainedCalls.*' > $r/tests.txt 2>&1; echo "rc=$? s=$((SECONDS-start))" >> $r/tests.txt
timeout 60 ./b/fp4gemm bench --backend cuda_decode --no-peers -m 33,64 --shapes 10240x8192,12288x4096,4096x12288 --json > $r/stream.jsonl 2>>$r/err.txt
echo "done s=$((SECONDS-start))" >> $r/progress.txt
