#!/usr/bin/env bash
# Session 15, call 6 (build e9834fb): where the rule gives 64-row wgmma CTAs (one warpgroup, N <= 8448
# on 132 SMs), 128-row CTAs with twice the K splits (the same CTA count, two consumer warpgroups per SM).
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call6.tgz -C $r .; }
trap finish EXIT
start=$SECONDS
one() {  # label file m shapes [env...]
  local label=$1 file=$2 m=$3 shapes=$4; shift 4
  timeout 150 env "$@" ./b/fp4gemm bench --backend cuda_decode --no-peers -m $m --shapes $shapes --json 2>>$r/err.txt \
    | sed "s/^{/{\"variant\":\"$label\",/" >> $r/$file.jsonl
  echo "$label $file $m $shapes s=$((SECONDS-start))" >> $r/progress.txt
}
W=FP4GEMM_DECODE_KERNEL=wgmma
n8=6144x4096,6144x8192,8192x4096,8192x8192,8192x16384,8192x28672
n4=4096x4096,4096x8192,4096x12288,4096x16384
n2=2048x8192,2048x16384
for rep in 1 2; do
  one rule n8 33,64 $n8 $W
  one 2:2 n8 33,64 $n8 $W FP4GEMM_WGMMA_SHAPE=2:2
  one rule n4 33,64 $n4 $W
  one 2:4 n4 33,64 $n4 $W FP4GEMM_WGMMA_SHAPE=2:4
  one rule n2 33,64 $n2 $W
  one 2:8 n2 33,64 $n2 $W FP4GEMM_WGMMA_SHAPE=2:8
done
echo "done s=$((SECONDS-start))" >> $r/progress.txt
