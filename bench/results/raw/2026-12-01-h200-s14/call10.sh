#!/usr/bin/env bash
# Session 14, call 10 (build: 32e7f1f): wgmma (its rule shape, now 128-row CTAs) against the rule's
# mma.sync at M = 17..32 on weights of 12288-16383 rows. One archive back.
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call10.tgz -C $r .; }
trap finish EXIT
sh=12288x4096,14336x4096,14336x8192,12288x8192,14336x2048
timeout 60 ./b/fp4gemm bench --backend cuda_decode --no-peers -m 17,24,32 --shapes $sh --json > $r/mma.jsonl 2>>$r/err.txt
FP4GEMM_DECODE_KERNEL=wgmma timeout 60 ./b/fp4gemm bench --backend cuda_decode --no-peers -m 17,24,32 --shapes $sh --json > $r/wgmma.jsonl 2>>$r/err.txt
