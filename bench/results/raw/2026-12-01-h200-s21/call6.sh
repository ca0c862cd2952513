#!/usr/bin/env bash
# Session 21, call 6: the M = 17-24 crossover on more tall weights (wgmma forced against the rule).
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call6.tgz -C $r .; }
trap finish EXIT
start=$SECONDS
bench() {  # variant env shapes m
  timeout 120 env $2 ./b/fp4gemm bench --backend cuda_decode --no-peers -m $4 --shapes $3 --json 2>>$r/err.txt | sed "s/^{/{\"variant\":\"$1\",/" >> $r/ab.jsonl
}
S=20480x8192,24576x8192,22528x4096,18432x4096,20480x6144,24576x6144,20480x3072,24576x2048,18432x8192
for rep in 1 2; do
  bench rule X=1 $S 17,20,24
  bench wg FP4GEMM_DECODE_KERNEL=wgmma $S 17,20,24
  echo "rep $rep s=$((SECONDS-start))" >> $r/progress.txt
done
