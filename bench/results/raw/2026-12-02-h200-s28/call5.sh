#!/usr/bin/env bash
# Session 28, call 5: the pair rule with its M = 17-19 clause (kMinShortManyTilePairWarpsPerSm)
# against the tip's rule (b/fp4gemm_base, 745ce19's cuda_decode), M = 16-20 and 24, ten weights,
# ABAB (M = 16 checks that two activation tiles are untouched); the launch-shape GPU tests.
# Bundle: scripts/gpu_bundle.sh build-dev out-carry --archive; fp4gemm_base.gz beside it.
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
gunzip -c out-carry/fp4gemm_base.gz > b/fp4gemm_base; chmod +x b/fp4gemm_base
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call5.tgz -C $r .; }
trap finish EXIT
start=$SECONDS
timeout 120 ./b/fp4gemm_gpu_tests --gtest_filter='CudaDecodeLaunchShapes.*' > $r/launch-shapes-test.txt 2>&1; echo "shapes-test rc=$? s=$((SECONDS-start))" >> $r/progress.txt
w=4096x4096,12288x4096,4096x12288,28672x8192,6144x4096,8192x8192,16384x4096,4608x3584,10240x8192,14336x4096
run() { local tag=$1 bin=$2; shift 2; env "$@" timeout 100 ./b/$bin bench --backend cuda_decode --no-peers -m 16,17,18,19,20,24 --shapes $w --json 2>>$r/bench.err | sed "s/^{/{\"shape\":\"$tag\",/" >> $r/sweep.jsonl; echo "$tag rc=$? s=$((SECONDS-start))" >> $r/progress.txt; }
for pass in 1 2; do
  run base$pass fp4gemm_base
  run pairs$pass fp4gemm
done
timeout 60 ./b/fp4gemm explain -m 17 -n 12288 -k 4096 > $r/explain-17x12288x4096.txt 2>&1
