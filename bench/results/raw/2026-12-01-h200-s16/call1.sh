#!/usr/bin/env bash
# Session 16, call 1: the four-activation-tile mma.sync kernel (M = 17-32) without its activation
# double buffer (np4: 77-86 registers against 138, so 2-3x the resident warps; np4r2: the same with
# two ring rounds per loop iteration, 80-90 registers), against the tip; rule and forced CTA shapes.
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
for v in np4 np4r2; do gunzip -c out-carry/var/fp4gemm_$v.gz > b/fp4gemm_$v; chmod +x b/fp4gemm_$v; done
cp b/fp4gemm b/fp4gemm_tip
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call1.tgz -C $r .; }
trap finish EXIT
start=$SECONDS
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv > $r/gpu.txt 2>&1
one() {  # variant shape m shapes [env...]
  local variant=$1 shape=$2 m=$3 shapes=$4; shift 4
  local extra=""; [ "$shape" != rule ] && extra="FP4GEMM_DECODE_SHAPE=$shape"
  timeout 200 env FP4GEMM_DECODE_KERNEL=mma $extra "$@" ./b/fp4gemm_$variant bench --backend cuda_decode --no-peers -m $m --shapes $shapes --json 2>>$r/err.txt \
    | sed "s/^{/{\"variant\":\"$variant\",\"shape\":\"$shape\",/" >> $r/sweep.jsonl
  echo "$variant $shape $m s=$((SECONDS-start))" >> $r/progress.txt
}
S=4096x4096,4096x12288,12288x4096,28672x8192,8192x8192,2048x8192,6144x4096,14336x4096
for rep in 1 2; do
  for v in tip np4 np4r2; do one $v rule 17,24,32 $S; done
done
for v in tip np4 np4r2; do
  for shape in 1:8 1:4 2:2 2:4; do one $v $shape 24,32 $S; done
done
# The wgmma kernel at the same rows (the rule's choice on the tall weights).
timeout 200 env FP4GEMM_DECODE_KERNEL=wgmma ./b/fp4gemm_tip bench --backend cuda_decode --no-peers -m 17,24,32 --shapes $S --json 2>>$r/err.txt \
  | sed 's/^{/{"variant":"wgmma","shape":"rule",/' >> $r/sweep.jsonl
echo "done s=$((SECONDS-start))" >> $r/progress.txt
