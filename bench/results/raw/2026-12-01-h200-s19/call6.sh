#!/usr/bin/env bash
# Session 19, call 6: `fp4gemm tune` on the H200 over issue 3's four weight shapes (default M grid
# 1-4096), JSON lines and the profile kept; explain with the profile at a few M.
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call6.tgz -C $r .; }
trap finish EXIT
start=$SECONDS
timeout 500 ./b/fp4gemm tune --shapes 4096x4096,4096x12288,12288x4096,28672x8192 --json --out $r/h200-profile.json > $r/tune.jsonl 2> $r/tune.err
echo "tune rc=$? s=$((SECONDS-start))" >> $r/progress.txt
for m in 1 48 64 128 4096; do
  ./b/fp4gemm explain -m $m -n 4096 -k 4096 --profile $r/h200-profile.json >> $r/explain.txt 2>&1
done
echo "done s=$((SECONDS-start))" >> $r/progress.txt
