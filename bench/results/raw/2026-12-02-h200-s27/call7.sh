#!/usr/bin/env bash
# Session 27, call 7 (timing only, values wrong): the three- and four-tile mma.sync kernels reading
# their activations as a packed layout would give them (each load instruction 512 contiguous
# bytes: flat-activations-timing.patch, b/fp4gemm_flat) against a2d4744's kernels
# (b/fp4gemm_base), mma.sync forced at the rule's shape, M = 24 and 32 only (the variant reads
# 8 * tiles rows), twice each, ABAB.
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
gunzip -c out-carry/fp4gemm_base.gz > b/fp4gemm_base; chmod +x b/fp4gemm_base
gunzip -c out-carry/fp4gemm_flat.gz > b/fp4gemm_flat; chmod +x b/fp4gemm_flat
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call7.tgz -C $r .; }
trap finish EXIT
start=$SECONDS
w=4096x4096,12288x4096,4096x12288,28672x8192,6144x4096,8192x8192,16384x4096,4608x3584,3584x18944
run() { local tag=$1 bin=$2; shift 2; env "$@" timeout 100 ./b/$bin bench --backend cuda_decode --no-peers -m 24,32 --shapes $w --json 2>>$r/bench.err | sed "s/^{/{\"shape\":\"$tag\",/" >> $r/sweep.jsonl; echo "$tag rc=$? s=$((SECONDS-start))" >> $r/progress.txt; }
run base-mma fp4gemm_base FP4GEMM_DECODE_KERNEL=mma
run flat-mma fp4gemm_flat FP4GEMM_DECODE_KERNEL=mma
run base-mma2 fp4gemm_base FP4GEMM_DECODE_KERNEL=mma
run flat-mma2 fp4gemm_flat FP4GEMM_DECODE_KERNEL=mma
