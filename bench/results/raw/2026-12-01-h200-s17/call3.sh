#!/usr/bin/env bash
# Session 17, call 3 (45685e6): the issue table with peers; the rule's M = 17-32 band on a few weights.
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call3.tgz -C $r .; }
trap finish EXIT
start=$SECONDS
timeout 250 ./b/fp4gemm bench -m 1,4,16,24,32,64 --shapes 4096x4096,4096x12288,12288x4096,28672x8192 --json > $r/table.jsonl 2>>$r/err.txt
echo "table s=$((SECONDS-start))" >> $r/progress.txt
timeout 100 ./b/fp4gemm bench --backend cuda_decode --no-peers -m 17,24,25,32 --shapes 4096x2048,3072x4096,5120x4096,28672x8192,14336x4096 --json > $r/band.jsonl 2>>$r/err.txt
echo "done s=$((SECONDS-start))" >> $r/progress.txt
