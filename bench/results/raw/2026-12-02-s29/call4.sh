#!/usr/bin/env bash
# Session 29, call 4: the committed build (bd2fd99): the whole GPU test binary, and its rule against
# wgmma forced, ABAB, on rows each clause decides (18432 rows now wgmma; 20480 rows, 8192 rows pairs).
# Bundle: scripts/gpu_bundle.sh build-dev out-carry --archive.
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call4.tgz -C $r .; }
trap finish EXIT
start=$SECONDS
nvidia-smi --query-gpu=name --format=csv,noheader > $r/gpu.txt
timeout 240 ./b/fp4gemm_gpu_tests --gtest_brief=1 > $r/gpu-tests.txt 2>&1; echo "gpu tests rc=$? s=$((SECONDS-start))" >> $r/progress.txt
w=18432x8192,20480x8192,8192x8192,8192x24576
run() { local tag=$1; shift; env "$@" timeout 100 ./b/fp4gemm bench --backend cuda_decode --no-peers -m 20,24,32 --shapes $w --json 2>>$r/bench.err | sed "s/^{/{\"shape\":\"$tag\",/" >> $r/sweep.jsonl; echo "$tag rc=$? s=$((SECONDS-start))" >> $r/progress.txt; }
for pass in 1 2; do
  run wgmma$pass FP4GEMM_DECODE_KERNEL=wgmma
  run rule$pass FP4GEMM_UNUSED=1
done
for nk in "18432 8192" "20480 8192" "8192 24576"; do set -- $nk
  ./b/fp4gemm explain -m 24 -n $1 -k $2 2>&1 | grep '^kernel:' | sed "s/^/${1}x$2 M=24 /" >> $r/explain.txt; done
python3 scripts/sweep_table.py $r/sweep.jsonl > $r/sweep-table.md 2>&1
cat $r/gpu.txt; grep -E '^\[  (PASSED|FAILED|SKIPPED) ' $r/gpu-tests.txt; cat $r/progress.txt $r/sweep-table.md; cut -c1-160 $r/explain.txt
