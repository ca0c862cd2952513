#!/usr/bin/env bash
# Session 26, call 7: the rule at M = 24 and 32 (three and four activation tiles; mma.sync or wgmma)
# against the other kernel and every compiled mma.sync shape forced, on published models' weights.
# Bundle: scripts/gpu_bundle.sh build-dev out-carry --archive
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call7.tgz -C $r .; }
trap finish EXIT
start=$SECONDS
w=6144x4096,28672x4096,10240x8192,8192x8192,57344x8192,8192x28672,7168x8192,10240x5120,5120x8192,51200x5120,4608x3584,3584x18944,4096x7168,8192x3584
run() { local tag=$1; shift; env "$@" timeout 120 ./b/fp4gemm bench --backend cuda_decode --no-peers -m 24,32 --shapes $w --json 2>/dev/null | sed "s/^{/{\"shape\":\"$tag\",/" >> $r/sweep.jsonl; echo "$tag s=$((SECONDS-start))" >> $r/progress.txt; }
run rule FP4GEMM_UNUSED=1
run mma FP4GEMM_DECODE_KERNEL=mma
run wgmma FP4GEMM_DECODE_KERNEL=wgmma
for s in 1:8 1:4 2:2 2:4 1:8:1:1 1:4:1:1 2:4:1:1; do run "mma-$s" FP4GEMM_DECODE_KERNEL=mma FP4GEMM_DECODE_SHAPE=$s; done
