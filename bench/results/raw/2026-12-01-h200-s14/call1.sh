#!/usr/bin/env bash
# Session 14, call 1. CLIs: tip (2640ea5), cap (tip + s13's mma residency-cap patch), and wgmma
# decomposition variants of the cap build (nodecode, nowgmma, noact, ring). One archive back.
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
for v in tip nodecode nowgmma noact ring; do gunzip -c out-carry/var/fp4gemm_$v.gz > b/fp4gemm_$v; chmod +x b/fp4gemm_$v; done
cp b/fp4gemm b/fp4gemm_cap
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call1.tgz -C $r .; }
trap finish EXIT
start=$SECONDS
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv > $r/gpu.txt 2>&1
one() {  # variant label file m shapes [env...]
  local v=$1 label=$2 file=$3 m=$4 shapes=$5; shift 5
  timeout 90 env "$@" ./b/fp4gemm_$v bench --backend cuda_decode --no-peers -m $m --shapes $shapes --json 2>>$r/err.txt \
    | sed "s/^{/{\"variant\":\"$label\",/" >> $r/$file.jsonl
  echo "$label $file $m $shapes s=$((SECONDS-start))" >> $r/progress.txt
}
issue=4096x4096,4096x12288,12288x4096,28672x8192
# A. residency cap (mma.sync, M <= 16), ABAB
one tip tip cap-ab 1,4,16 $issue X=1
one cap cap cap-ab 1,4,16 $issue X=1
one tip tip cap-ab 1,4,16 $issue X=1
one cap cap cap-ab 1,4,16 $issue X=1
# B. wgmma shapes re-measured now that grids <= 132 CTAs run one per SM (tip build)
mid=4096x4096,4096x12288,12288x4096
for s in 1:1 1:2 1:4 2:1 2:2 2:4 2:8; do
  one tip "wgmma-$s" wgmma-shapes 16,32,64 $mid FP4GEMM_DECODE_KERNEL=wgmma FP4GEMM_WGMMA_SHAPE=$s
done
one tip rule wgmma-shapes 16,32,64 $mid X=1
one tip "wgmma-2:1" wgmma-shapes 16 28672x8192 FP4GEMM_DECODE_KERNEL=wgmma FP4GEMM_WGMMA_SHAPE=2:1
one tip "wgmma-1:1" wgmma-shapes 16 28672x8192 FP4GEMM_DECODE_KERNEL=wgmma FP4GEMM_WGMMA_SHAPE=1:1
# C. what a wgmma CTA's chunk costs: 1:1 at one (8448), two (16896) CTAs per SM, the rule's 12288
dec=8448x4096,16896x4096,12288x4096
for v in cap nodecode nowgmma noact ring; do
  one $v $v decompose 32,64 $dec FP4GEMM_DECODE_KERNEL=wgmma FP4GEMM_WGMMA_SHAPE=1:1
done
one cap cap decompose 32,64 $dec FP4GEMM_DECODE_KERNEL=wgmma FP4GEMM_WGMMA_SHAPE=1:1

# D. the cap build's mma.sync tests (launch shapes, chained calls, every backend case)
timeout 170 ./b/fp4gemm_gpu_tests --gtest_brief=1 --gtest_filter='CudaDecodeLaunch*:CudaDecodeChained*:All/CudaBackend.*cuda_decode*' > $r/gpu-tests-cap.txt 2>&1; echo "rc=$? s=$((SECONDS-start))" >> $r/gpu-tests-cap.txt
echo "done s=$((SECONDS-start))" >> $r/progress.txt
