#!/usr/bin/env bash
# Session 26, call 8 (data for the next fit; no change measured): the mma.sync/wgmma switch at
# M = 24/32 on 9216-12288-row weights, and M = 32 CTA shapes on 4352-5632-row weights, the rule
# against the alternatives in one run; 57344x8192 M = 32 rule and wgmma again (call 7's 9% gap).
# Bundle: scripts/gpu_bundle.sh build-dev out-carry --archive
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call8.tgz -C $r .; }
trap finish EXIT
start=$SECONDS
run() { local tag=$1 ms=$2 w=$3; shift 3; env "$@" timeout 40 ./b/fp4gemm bench --backend cuda_decode --no-peers -m $ms --shapes $w --json 2>/dev/null | sed "s/^{/{\"shape\":\"$tag\",/" >> $r/sweep.jsonl; echo "$tag $w s=$((SECONDS-start))" >> $r/progress.txt; }
a=9216x4096,9216x8192,10240x4096,10240x5120,11264x5120,12288x5120,12288x8192
run rule 24,32 $a X=1
run wgmma 24,32 $a FP4GEMM_DECODE_KERNEL=wgmma
run mma 24,32 $a FP4GEMM_DECODE_KERNEL=mma
b=4352x4096,4608x3584,4608x4096,5120x3584,5632x4096,4608x8192
run rule 32 $b X=1
for s in 1:4 1:8:1:1 2:4; do run "mma-$s" 32 $b FP4GEMM_DECODE_KERNEL=mma FP4GEMM_DECODE_SHAPE=$s; done
run wgmma 32 57344x8192 FP4GEMM_DECODE_KERNEL=wgmma
run rule 32 57344x8192 X=1
