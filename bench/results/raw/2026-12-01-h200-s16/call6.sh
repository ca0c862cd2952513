#!/usr/bin/env bash
# Session 16, call 6 (aebe8bd): two activation tiles (M = 9-16) without their activation double
# buffer: np2 (99-100 registers, the same CTAs per SM) and np2b20 (bounded to 96 registers, 24-28
# bytes of spills, 20 warps per SM instead of 15-16), against the tip; rule and forced shapes.
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
for v in np2 np2b20; do gunzip -c out-carry/var/fp4gemm_$v.gz > b/fp4gemm_$v; chmod +x b/fp4gemm_$v; done
cp b/fp4gemm b/fp4gemm_tip
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call6.tgz -C $r .; }
trap finish EXIT
start=$SECONDS
one() {  # variant shape m shapes
  local variant=$1 shape=$2 m=$3 shapes=$4
  local extra=""; [ "$shape" != rule ] && extra="FP4GEMM_DECODE_SHAPE=$shape"
  timeout 200 env FP4GEMM_DECODE_KERNEL=mma $extra ./b/fp4gemm_$variant bench --backend cuda_decode --no-peers -m $m --shapes $shapes --json 2>>$r/err.txt \
    | sed "s/^{/{\"variant\":\"$variant\",\"shape\":\"$shape\",/" >> $r/sweep.jsonl
  echo "$variant $shape $m s=$((SECONDS-start))" >> $r/progress.txt
}
S=4096x4096,4096x12288,12288x4096,28672x8192,8192x8192,6144x4096,16384x4096
for rep in 1 2; do
  for v in tip np2 np2b20; do one $v rule 9,16 $S; done
done
for v in tip np2 np2b20; do
  for shape in 1:4:2 1:5:2 2:2:2 1:8:2 1:8:1; do one $v $shape 16 $S; done
done
echo "done s=$((SECONDS-start))" >> $r/progress.txt
