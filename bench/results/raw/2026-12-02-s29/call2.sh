#!/usr/bin/env bash
# Session 29, call 2: the refined rule (tile pairs ahead of wgmma only where wgmma's grid splits K
# and K <= 16384) against wgmma and mma.sync forced, ABAB, at the K bound (8192 rows, four tiles)
# and on the tall band (three tiles, long K); the whole GPU test binary.
# Bundle: scripts/gpu_bundle.sh build-dev out-carry --archive.
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call2.tgz -C $r .; }
trap finish EXIT
start=$SECONDS
timeout 240 ./b/fp4gemm_gpu_tests --gtest_brief=1 > $r/gpu-tests.txt 2>&1; echo "gpu tests rc=$? s=$((SECONDS-start))" >> $r/progress.txt
w=8192x12288,8192x16384,8192x20480,8192x24576,18432x14336,20480x14336,20480x16384,20480x20480,22528x8192,24576x8192,24576x14336,16384x4096,8192x8192
run() { local tag=$1; shift; env "$@" timeout 100 ./b/fp4gemm bench --backend cuda_decode --no-peers -m 17,20,24,25,32 --shapes $w --json 2>>$r/bench.err | sed "s/^{/{\"shape\":\"$tag\",/" >> $r/sweep.jsonl; echo "$tag rc=$? s=$((SECONDS-start))" >> $r/progress.txt; }
for pass in 1 2; do
  run wgmma$pass FP4GEMM_DECODE_KERNEL=wgmma
  run mma$pass FP4GEMM_DECODE_KERNEL=mma
  run rule$pass FP4GEMM_UNUSED=1
done
for m in 20 32; do for nk in "8192 8192" "16384 4096" "20480 4096" "8192 28672"; do set -- $nk
  ./b/fp4gemm explain -m $m -n $1 -k $2 2>&1 | grep '^kernel:' | sed "s/^/${1}x$2 M=$m /" >> $r/explain.txt; done; done
python3 scripts/sweep_table.py $r/sweep.jsonl > $r/sweep-table.md 2>&1
grep -E '^\[  (PASSED|FAILED|SKIPPED) ' $r/gpu-tests.txt; cat $r/progress.txt $r/sweep-table.md
