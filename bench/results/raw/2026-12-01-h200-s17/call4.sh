#!/usr/bin/env bash
# Session 17, call 4 (45685e6): the tall clause's bounds (mma.sync vs wgmma at M = 17-24) and the
# idle split's threshold (2:1 vs 2:2 at M = 33/64).
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call4.tgz -C $r .; }
trap finish EXIT
start=$SECONDS
for rep in 1 2; do
  for kernel in mma wgmma; do
    timeout 100 env FP4GEMM_DECODE_KERNEL=$kernel ./b/fp4gemm bench --backend cuda_decode --no-peers -m 17,20,24 \
      --shapes 24576x8192,28672x4096,24576x4096,28672x2048 --json 2>>$r/err.txt | sed "s/^{/{\"variant\":\"$kernel\",/" >> $r/tall.jsonl
  done
  for shape in 2:1 2:2; do
    timeout 100 env FP4GEMM_WGMMA_SHAPE=$shape ./b/fp4gemm bench --backend cuda_decode --no-peers -m 33,64 \
      --shapes 13312x8192,14336x8192 --json 2>>$r/err.txt | sed "s/^{/{\"variant\":\"$shape\",/" >> $r/split.jsonl
  done
done
echo "done s=$((SECONDS-start))" >> $r/progress.txt
