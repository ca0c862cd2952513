#!/usr/bin/env bash
# Session 25, call 3: the K split's partial sums read one split at a time (16 loads together),
# then each split count forced (FP4GEMM_PREFILL_SPLITS) on the four issue weights at M = 65-256,
# to fit a per-CTA cost to the rule. Bundle: scripts/gpu_bundle.sh build-dev out-carry --archive
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call3.tgz -C $r .; }
trap finish EXIT
start=$SECONDS
timeout 90 ./b/fp4gemm_gpu_tests --gtest_filter='CudaDecodeWgmma.Prefill*' > $r/prefill-tests.txt 2>&1; rc=$?; echo "prefill rc=$rc s=$((SECONDS-start))" >> $r/progress.txt
[ $rc = 0 ] || exit 1
shapes=4096x4096,12288x4096,4096x12288,28672x8192
for s in 1 2 3 4 6 8; do
  FP4GEMM_PREFILL_SPLITS=$s timeout 60 ./b/fp4gemm bench --backend cuda_decode --no-peers -m 65,128,256 --shapes $shapes --json 2>> $r/err.txt \
    | sed "s/^{/{\"splits\":$s,/" >> $r/forced.jsonl; echo "splits $s rc=$? s=$((SECONDS-start))" >> $r/progress.txt
done
timeout 60 ./b/fp4gemm bench --backend cuda_decode --no-peers -m 65,128,256,512 --shapes $shapes --json > $r/rule.jsonl 2>> $r/err.txt; echo "rule rc=$? s=$((SECONDS-start))" >> $r/progress.txt
