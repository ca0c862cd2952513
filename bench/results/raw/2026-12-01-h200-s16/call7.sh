#!/usr/bin/env bash
# Session 16, call 7 (working tree: aebe8bd + a three-activation-tile mma.sync kernel for M = 17-24):
# the whole GPU suite (every compiled shape, now with three tiles, against the reference), then
# the tree against aebe8bd's CLI on the weights where mma.sync runs at M = 17-32, and the three-tile
# kernel's forced CTA shapes.
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
gunzip -c out-carry/var/fp4gemm_tip.gz > b/fp4gemm_tip; chmod +x b/fp4gemm_tip
cp b/fp4gemm b/fp4gemm_new
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call7.tgz -C $r .; }
trap finish EXIT
start=$SECONDS
timeout 300 ./b/fp4gemm_gpu_tests --gtest_brief=1 > $r/gpu-tests.txt 2>&1; echo "rc=$? s=$((SECONDS-start))" >> $r/gpu-tests.txt
S=4096x4096,4096x12288,12288x4096,6144x8192,12288x8192,10240x8192,2048x8192,3072x4096,5120x4096,6144x4096,4096x2048
for rep in 1 2; do
  for v in tip new; do
    timeout 200 ./b/fp4gemm_$v bench --backend cuda_decode --no-peers -m 16,17,20,24,25,32 --shapes $S --json 2>>$r/err.txt \
      | sed "s/^{/{\"variant\":\"$v\",\"shape\":\"rule\",/" >> $r/ab.jsonl
    echo "$v rep $rep s=$((SECONDS-start))" >> $r/progress.txt
  done
done
for shape in 1:8 1:4 2:2 2:4; do
  timeout 200 env FP4GEMM_DECODE_KERNEL=mma FP4GEMM_DECODE_SHAPE=$shape ./b/fp4gemm_new bench --backend cuda_decode --no-peers -m 20,24 --shapes $S --json 2>>$r/err.txt \
    | sed "s/^{/{\"variant\":\"new\",\"shape\":\"$shape\",/" >> $r/forced.jsonl
  echo "forced $shape s=$((SECONDS-start))" >> $r/progress.txt
done
echo "done s=$((SECONDS-start))" >> $r/progress.txt
