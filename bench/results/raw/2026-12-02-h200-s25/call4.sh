#!/usr/bin/env bash
# Session 25, call 4: the K split rule with its per-CTA overhead term: the prefill tests, the bench
# with cuBLAS BF16 / cuBLASLt FP8 beside it and auto's choice, and ncu's kernel durations (pack and
# prefill, one call each way) for 4096^2 M = 128 unsplit and split 4 ways, to see where a one-round
# call's ~13 us beyond its chunks goes. Bundle: scripts/gpu_bundle.sh build-dev out-carry --archive
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call4.tgz -C $r .; }
trap finish EXIT
start=$SECONDS
timeout 90 ./b/fp4gemm_gpu_tests --gtest_filter='CudaDecodeWgmma.Prefill*' > $r/prefill-tests.txt 2>&1; rc=$?; echo "prefill rc=$rc s=$((SECONDS-start))" >> $r/progress.txt
[ $rc = 0 ] || exit 1
shapes=4096x4096,12288x4096,4096x12288,28672x8192
timeout 150 ./b/fp4gemm bench -m 65,128,256,512 --shapes $shapes --json > $r/rule.jsonl 2>> $r/err.txt; echo "bench rc=$? s=$((SECONDS-start))" >> $r/progress.txt
for s in 1 4; do
  FP4GEMM_PREFILL_SPLITS=$s timeout 90 ncu --metrics gpu__time_duration.sum -k regex:'prefill' --launch-skip 10 --launch-count 6 --csv \
    ./b/fp4gemm bench --backend cuda_decode --no-peers -m 128 --shapes 4096x4096 > $r/ncu-split$s.csv 2>&1; echo "ncu $s rc=$? s=$((SECONDS-start))" >> $r/progress.txt
done
for m in 65 128 256; do ./b/fp4gemm explain -m $m -n 4096 -k 12288 2>&1 | grep -E '^(kernel|chosen|auto)' >> $r/explain.txt; done
