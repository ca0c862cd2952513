#!/usr/bin/env bash
# Session 29, call 3: the committed rule (pairs ahead of wgmma where wgmma splits K and each pair
# warp streams at most 96 chunks) against wgmma and mma.sync forced, ABAB, at its edges; the
# launch-shape GPU tests. Bundle: scripts/gpu_bundle.sh build-dev out-carry --archive.
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call3.tgz -C $r .; }
trap finish EXIT
start=$SECONDS
nvidia-smi --query-gpu=name --format=csv,noheader > $r/gpu.txt
timeout 120 ./b/fp4gemm_gpu_tests --gtest_filter='CudaDecodeLaunchShapes.*' --gtest_brief=1 > $r/launch-shapes-test.txt 2>&1; echo "shapes-test rc=$? s=$((SECONDS-start))" >> $r/progress.txt
w=18432x4096,18432x8192,18432x12288,20480x12288,24576x12288,8192x24576,8192x28672,16384x2048
run() { local tag=$1; shift; env "$@" timeout 100 ./b/fp4gemm bench --backend cuda_decode --no-peers -m 17,20,24,25,32 --shapes $w --json 2>>$r/bench.err | sed "s/^{/{\"shape\":\"$tag\",/" >> $r/sweep.jsonl; echo "$tag rc=$? s=$((SECONDS-start))" >> $r/progress.txt; }
for pass in 1 2; do
  run wgmma$pass FP4GEMM_DECODE_KERNEL=wgmma
  run mma$pass FP4GEMM_DECODE_KERNEL=mma
  run rule$pass FP4GEMM_UNUSED=1
done
./b/fp4gemm explain -m 24 -n 18432 -k 8192 2>&1 | grep '^kernel:' > $r/explain.txt
python3 scripts/sweep_table.py $r/sweep.jsonl > $r/sweep-table.md 2>&1
cat $r/gpu.txt; grep -E '^\[  (PASSED|FAILED|SKIPPED) ' $r/launch-shapes-test.txt; cat $r/progress.txt $r/sweep-table.md
