#!/usr/bin/env bash
# Session 28, call 1: the contiguous activation K order (docs/design/contiguous-activation-k-order.md)
# against the tip before it (745ce19, b/fp4gemm_base, built sm_90a only), same run, ABAB; the rule's
# choice and mma.sync forced at M = 17-32; then scripts/gpu_check.sh on the new build (GPU tests,
# issue-3 bench with peers, PDL off; the sanitizers are call 2).
# Bundle: scripts/gpu_bundle.sh build-dev out-carry --archive; fp4gemm_base.gz beside it.
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
gunzip -c out-carry/fp4gemm_base.gz > b/fp4gemm_base; chmod +x b/fp4gemm_base
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call1.tgz -C $r .; }
trap finish EXIT
start=$SECONDS
w=4096x4096,12288x4096,4096x12288,28672x8192,6144x4096,8192x8192,16384x4096,4608x3584
run() { local tag=$1 bin=$2 ms=$3; shift 3; env "$@" timeout 100 ./b/$bin bench --backend cuda_decode --no-peers -m $ms --shapes $w --json 2>>$r/bench.err | sed "s/^{/{\"shape\":\"$tag\",/" >> $r/sweep.jsonl; echo "$tag rc=$? s=$((SECONDS-start))" >> $r/progress.txt; }
for pass in 1 2; do
  run base-rule$pass fp4gemm_base 1,4,8,16,24,32,48,64
  run new-rule$pass fp4gemm 1,4,8,16,24,32,48,64
  run base-mma$pass fp4gemm_base 17,24,25,32 FP4GEMM_DECODE_KERNEL=mma
  run new-mma$pass fp4gemm 17,24,25,32 FP4GEMM_DECODE_KERNEL=mma
done
SANITIZE=0 timeout 300 scripts/gpu_check.sh b $r/check > $r/gpu-check.txt 2>&1; echo "check rc=$? s=$((SECONDS-start))" >> $r/progress.txt
