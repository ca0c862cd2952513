#!/usr/bin/env bash
# Session 29, call 5: the tip after the tuning headers were split (2365fc7, no rule change): the
# whole GPU test binary and `explain` on the four issue shapes at M = 24/32/128.
# Bundle: scripts/gpu_bundle.sh build-dev out-carry --archive.
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call5.tgz -C $r .; }
trap finish EXIT
nvidia-smi --query-gpu=name --format=csv,noheader > $r/gpu.txt
timeout 240 ./b/fp4gemm_gpu_tests --gtest_brief=1 > $r/gpu-tests.txt 2>&1; echo "gpu tests rc=$?" >> $r/progress.txt
for m in 24 32 128; do for nk in "28672 8192" "12288 4096" "4096 12288" "4096 4096"; do set -- $nk
  ./b/fp4gemm explain -m $m -n $1 -k $2 2>&1 | grep '^kernel:' | sed "s/^/${1}x$2 M=$m /" >> $r/explain.txt; done; done
cat $r/gpu.txt; grep -E '^\[  (PASSED|FAILED|SKIPPED) ' $r/gpu-tests.txt; grep -A3 FAILED $r/gpu-tests.txt | head; cat $r/progress.txt; cut -c1-140 $r/explain.txt
