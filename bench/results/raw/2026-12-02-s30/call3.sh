#!/usr/bin/env bash
# Session 30, call 3: the mma.sync kernel with K split over clusters of 2-8 CTAs (a build of the
# working tree after 4e3facc; twelve clustered shapes compiled, the rule unchanged): the launch-shape
# GPU test (every compiled shape, the clustered ones included) plain and under memcheck and
# racecheck, then a sweep of the clustered shapes against the rule on weights of 256-3072 rows
# (K projections of GQA attention, MoE experts), M = 1, 8, 16; the rule runs first and last.
# Bundle: scripts/gpu_bundle.sh build-dev out-carry --archive.
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call3.tgz -C $r .; cp $r/sweep-table.md $OUT/ 2>/dev/null; }
trap finish EXIT
start=$SECONDS
timeout 200 ./b/fp4gemm_gpu_tests --gtest_brief=1 > $r/gpu-tests.txt 2>&1; echo "gpu tests rc=$? s=$((SECONDS-start))" >> $r/progress.txt
w=256x4096,512x4096,1024x4096,1536x4096,2048x4096,3072x4096,512x8192,1024x8192,2048x8192,1024x2048,2048x2048,4096x1024
run() { local tag=$1; shift; env "$@" timeout 60 ./b/fp4gemm bench --backend cuda_decode --no-peers -m 1,8,16 --shapes $w --json 2>>$r/bench.err | sed "s/^{/{\"shape\":\"$tag\",/" >> $r/sweep.jsonl; echo "$tag rc=$? s=$((SECONDS-start))" >> $r/progress.txt; }
run rule1 FP4GEMM_UNUSED=1
for c in 2 4 8; do
  run 1:8c$c FP4GEMM_DECODE_SHAPE=1:8:1:0:$c
  run 1:4c$c FP4GEMM_DECODE_SHAPE=1:4:1:0:$c
done
run rule FP4GEMM_UNUSED=1
python3 scripts/sweep_table.py $r/sweep.jsonl > $r/sweep-table.md 2>&1
for tool in memcheck racecheck; do
  timeout 150 $(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer) --tool $tool ./b/fp4gemm_gpu_tests --gtest_brief=1 --gtest_filter='CudaDecodeLaunchShapes.*' > $r/$tool.txt 2>&1
  echo "$tool rc=$? s=$((SECONDS-start))" >> $r/progress.txt
done
cat $r/progress.txt; grep -E '^\[  (PASSED|FAILED|SKIPPED) |Failure|error' $r/gpu-tests.txt | head; grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $r/memcheck.txt $r/racecheck.txt; cat $r/sweep-table.md
