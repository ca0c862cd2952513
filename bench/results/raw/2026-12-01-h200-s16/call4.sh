#!/usr/bin/env bash
# Session 16, call 4 (aebe8bd): the wgmma kernel's CTA shapes (FP4GEMM_WGMMA_SHAPE=warpgroups:splits)
# on weights whose rule grid leaves SMs idle or holds one warpgroup per CTA, at M = 17, 32 and 64.
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call4.tgz -C $r .; }
trap finish EXIT
start=$SECONDS
one() {  # label m shapes [env...]
  local label=$1 m=$2 shapes=$3; shift 3
  timeout 200 env "$@" ./b/fp4gemm bench --backend cuda_decode --no-peers -m $m --shapes $shapes --json 2>>$r/err.txt \
    | sed "s/^{/{\"variant\":\"$label\",/" >> $r/wgmma-shapes.jsonl
  echo "$label $m s=$((SECONDS-start))" >> $r/progress.txt
}
S=12288x4096,4096x12288,4096x4096,6144x8192,10240x8192,12288x8192,6144x4096,28672x8192
W=FP4GEMM_DECODE_KERNEL=wgmma
for rep in 1 2; do
  one rule 17,32,64 $S $W
  for shape in 1:1 1:2 1:4 2:1 2:2; do one $shape 17,32,64 $S $W FP4GEMM_WGMMA_SHAPE=$shape; done
done
one mma 17,32,64 $S FP4GEMM_DECODE_KERNEL=mma
echo "done s=$((SECONDS-start))" >> $r/progress.txt
