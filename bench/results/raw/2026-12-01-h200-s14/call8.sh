#!/usr/bin/env bash
# Session 14, call 8 (build: a595e4c): GPU suite, the table with peers, and 128-row CTAs one per SM
# (2:1) against the rule's 64-row CTAs (1:1) where the 64-row grid exceeds the SMs. One archive back.
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call8.tgz -C $r .; }
trap finish EXIT
start=$SECONDS
timeout 150 ./b/fp4gemm bench -m 1,4,16,32,64 --shapes 4096x4096,4096x12288,12288x4096,28672x8192 --json > $r/table.jsonl 2>$r/table-err.txt
echo "table s=$((SECONDS-start))" >> $r/progress.txt
one() {  # label m shapes [env...]
  local label=$1 m=$2 shapes=$3; shift 3
  timeout 150 env "$@" ./b/fp4gemm bench --backend cuda_decode --no-peers -m $m --shapes $shapes --json 2>>$r/err.txt \
    | sed "s/^{/{\"variant\":\"$label\",/" >> $r/ctas.jsonl
  echo "$label $m $shapes s=$((SECONDS-start))" >> $r/progress.txt
}
sh=10240x8192,12288x4096,12288x8192,14336x4096,16384x4096,16896x4096
for pass in 1 2; do
  one rule 33,64 $sh X=1
  one "2:1" 33,64 $sh FP4GEMM_DECODE_KERNEL=wgmma FP4GEMM_WGMMA_SHAPE=2:1
done
one rule 17,32 16384x4096,28672x8192 X=1
one "2:1" 17,32 16384x4096 FP4GEMM_DECODE_KERNEL=wgmma FP4GEMM_WGMMA_SHAPE=2:1
one "1:1" 17,32 28672x8192 FP4GEMM_DECODE_KERNEL=wgmma FP4GEMM_WGMMA_SHAPE=1:1
timeout 200 ./b/fp4gemm_gpu_tests --gtest_brief=1 > $r/gpu-tests.txt 2>&1; echo "rc=$? s=$((SECONDS-start))" >> $r/gpu-tests.txt
echo "done s=$((SECONDS-start))" >> $r/progress.txt
