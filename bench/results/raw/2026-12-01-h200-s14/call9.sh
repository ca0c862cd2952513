#!/usr/bin/env bash
# Session 14, call 9 (build: the 128-row-CTA shape rule on top of a595e4c): wgmma GPU tests, the rule's
# shapes now, and the issue shapes at M = 32, 64 with peers. One archive back.
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call9.tgz -C $r .; }
trap finish EXIT
start=$SECONDS
timeout 100 ./b/fp4gemm_gpu_tests --gtest_brief=1 --gtest_filter='CudaDecodeWgmma.*:CudaDecodeChained*' > $r/gpu-tests-wgmma.txt 2>&1; echo "rc=$? s=$((SECONDS-start))" >> $r/gpu-tests-wgmma.txt
timeout 100 ./b/fp4gemm bench --backend cuda_decode --no-peers -m 17,32,33,64 --shapes 10240x8192,12288x4096,14336x4096,16384x4096,16384x2048 --json > $r/rule.jsonl 2>>$r/err.txt
echo "rule s=$((SECONDS-start))" >> $r/progress.txt
timeout 100 ./b/fp4gemm bench -m 32,64 --shapes 12288x4096,28672x8192 --json > $r/table.jsonl 2>>$r/err.txt
echo "done s=$((SECONDS-start))" >> $r/progress.txt
