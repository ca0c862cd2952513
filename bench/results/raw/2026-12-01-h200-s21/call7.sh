#!/usr/bin/env bash
# Session 21, call 7: the tip with the tall clause from 18432 rows: GPU suite, the clause's rows
# against mma.sync forced, and the issue table.
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call7.tgz -C $r .; }
trap finish EXIT
start=$SECONDS
timeout 200 ./b/fp4gemm_gpu_tests --gtest_brief=1 > $r/gpu-tests.txt 2>&1; echo "rc=$? s=$((SECONDS-start))" >> $r/gpu-tests.txt
echo "suite s=$((SECONDS-start))" >> $r/progress.txt
bench() {  # variant env shapes m
  timeout 120 env $2 ./b/fp4gemm bench --backend cuda_decode --no-peers -m $4 --shapes $3 --json 2>>$r/err.txt | sed "s/^{/{\"variant\":\"$1\",/" >> $r/ab.jsonl
}
S=18432x4096,20480x8192,24576x8192,20480x2048,16384x8192
bench rule X=1 $S 17,24
bench mma FP4GEMM_DECODE_KERNEL=mma $S 17,24
echo "ab s=$((SECONDS-start))" >> $r/progress.txt
timeout 150 ./b/fp4gemm bench -m 1,4,16,24,32,64 --shapes 4096x4096,4096x12288,12288x4096,28672x8192 --json > $r/issue-table.jsonl 2>>$r/err.txt
echo "table rc=$? s=$((SECONDS-start))" >> $r/progress.txt
