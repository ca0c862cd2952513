#!/usr/bin/env bash
# Session 27, call 9: mma.sync against wgmma at M = 25 and 32 on 9216-16384 rows with
# K = 4096, 5120 and 8192 (session 26's M = 25-32 wgmma clause: N >= 9216 and K >= 4096), both
# forced once each (the budget), with a2d4744's kernels (b/fp4gemm_base).
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
gunzip -c out-carry/fp4gemm_base.gz > b/fp4gemm_base; chmod +x b/fp4gemm_base
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call9.tgz -C $r .; }
trap finish EXIT
start=$SECONDS
w=9216x4096,10240x4096,12288x4096,14336x4096,16384x4096,9216x5120,12288x5120,16384x5120,10240x8192,12288x8192
run() { local tag=$1; shift; env "$@" timeout 100 ./b/fp4gemm_base bench --backend cuda_decode --no-peers -m 25,32 --shapes $w --json 2>>$r/bench.err | sed "s/^{/{\"shape\":\"$tag\",/" >> $r/sweep.jsonl; echo "$tag rc=$? s=$((SECONDS-start))" >> $r/progress.txt; }
run mma FP4GEMM_DECODE_KERNEL=mma
run wgmma FP4GEMM_DECODE_KERNEL=wgmma
