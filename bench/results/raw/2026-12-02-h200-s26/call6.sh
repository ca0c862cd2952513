#!/usr/bin/env bash
# Session 26, call 6: the rows call 5 could compare only across calls, now against the old rule's
# shapes forced in the same run (3584 rows and 4096x3072 against 1:8 / 1:12 single tiles; the
# tall M = 16 weights against 2:2:2), repeated twice, alternating.
# Bundle: scripts/gpu_bundle.sh build-dev out-carry --archive
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call6.tgz -C $r .; }
trap finish EXIT
start=$SECONDS
bench() { timeout 60 ./b/fp4gemm bench --backend cuda_decode --no-peers --json "$@"; }
for round in 1 2; do
  bench -m 1,4,8,16 --shapes 3584x4096,3584x8192,3584x3584 | sed "s/^{/{\"shape\":\"rule\",\"round\":$round,/" >> $r/ab.jsonl
  FP4GEMM_DECODE_SHAPE=1:8 bench -m 1,4,8,16 --shapes 3584x4096,3584x8192,3584x3584 | sed "s/^{/{\"shape\":\"1:8\",\"round\":$round,/" >> $r/ab.jsonl
  bench -m 1,4,8,16 --shapes 4096x3072 | sed "s/^{/{\"shape\":\"rule\",\"round\":$round,/" >> $r/ab.jsonl
  FP4GEMM_DECODE_SHAPE=1:12 bench -m 1,4,8 --shapes 4096x3072 | sed "s/^{/{\"shape\":\"1:12\",\"round\":$round,/" >> $r/ab.jsonl
  FP4GEMM_DECODE_SHAPE=1:8 bench -m 16 --shapes 4096x3072 | sed "s/^{/{\"shape\":\"1:8\",\"round\":$round,/" >> $r/ab.jsonl
  bench -m 9,16 --shapes 28672x4096,37888x3584 | sed "s/^{/{\"shape\":\"rule\",\"round\":$round,/" >> $r/ab.jsonl
  FP4GEMM_DECODE_SHAPE=2:2:2 bench -m 9,16 --shapes 28672x4096,37888x3584 | sed "s/^{/{\"shape\":\"2:2:2\",\"round\":$round,/" >> $r/ab.jsonl
  echo "round $round s=$((SECONDS-start))" >> $r/progress.txt
done
