#!/usr/bin/env bash
# Session 18, call 3: the whole GPU suite on the tip (the every-shape test now reaches the 1x12 and
# 1x5x2 shapes), and the issue-3 table with peers.
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call3.tgz -C $r .; }
trap finish EXIT
start=$SECONDS
nvidia-smi > $r/gpu.txt 2>&1
timeout 240 ./b/fp4gemm_gpu_tests --gtest_brief=1 > $r/gpu-tests.txt 2>&1; echo "rc=$? s=$((SECONDS-start))" >> $r/gpu-tests.txt
echo "suite s=$((SECONDS-start))" >> $r/progress.txt
timeout 240 ./b/fp4gemm bench -m 1,4,16,24,32,64 --shapes 4096x4096,4096x12288,12288x4096,28672x8192 --json > $r/issue-table.jsonl 2>$r/err.txt
echo "table rc=$? s=$((SECONDS-start))" >> $r/progress.txt
