#!/usr/bin/env bash
# Session 16, call 2 (tip c08ae3d): (a) wgmma against mma.sync at M = 9-32 on weights whose wgmma
# grid puts two warpgroups on most SMs (8192 rows) or not (6144, 10240, 12288 rows);
# (b) four activation tiles (M = 17-32): the rule's CTA shape against 2:4 (twice the rows per CTA,
# half the K split: the same warps, half the CTAs) where the rule's grid is over one wave.
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call2.tgz -C $r .; }
trap finish EXIT
start=$SECONDS
one() {  # label file m shapes [env...]
  local label=$1 file=$2 m=$3 shapes=$4; shift 4
  timeout 200 env "$@" ./b/fp4gemm bench --backend cuda_decode --no-peers -m $m --shapes $shapes --json 2>>$r/err.txt \
    | sed "s/^{/{\"variant\":\"$label\",/" >> $r/$file.jsonl
  echo "$label $file $m s=$((SECONDS-start))" >> $r/progress.txt
}
A=8192x8192,8192x16384,8192x28672,8448x8192,6144x8192,10240x8192,12288x8192,8192x4096,8192x6144,16384x2048
B=4096x4096,4096x8192,4096x12288,4096x16384,3072x4096,3072x8192,2048x4096,4096x2048,2560x8192,5120x4096
for rep in 1 2; do
  one mma a 9,16,17,24,32 $A FP4GEMM_DECODE_KERNEL=mma
  one wgmma a 9,16,17,24,32 $A FP4GEMM_DECODE_KERNEL=wgmma
  one rule b 17,24,32 $B FP4GEMM_DECODE_KERNEL=mma
  one 2:4 b 17,24,32 $B FP4GEMM_DECODE_KERNEL=mma FP4GEMM_DECODE_SHAPE=2:4
  one 2:2 b 17,24,32 $B FP4GEMM_DECODE_KERNEL=mma FP4GEMM_DECODE_SHAPE=2:2
done
echo "done s=$((SECONDS-start))" >> $r/progress.txt
