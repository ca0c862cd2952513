#!/usr/bin/env bash
# Session 26, call 2: the launch-shape GPU test (now with 2:1:16:2 too) under memcheck and
# racecheck; the pair shapes 1:16:2 and 1:24:2 forced against the rule on 4096-row weights over K
# (M = 1/4/8, and M = 9/16 with 1:16:2), and on rows around 4096.
# Bundle: scripts/gpu_bundle.sh build-dev out-carry --archive
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call2.tgz -C $r .; }
trap finish EXIT
start=$SECONDS
timeout 60 ./b/fp4gemm_gpu_tests --gtest_filter='CudaDecodeLaunchShapes.*' > $r/launch-shapes-test.txt 2>&1; echo "shapes-test rc=$? s=$((SECONDS-start))" >> $r/progress.txt
ks=4096x1024,4096x2048,4096x3072,4096x4096,4096x5120,4096x6144,4096x8192,4096x10240,4096x11008,4096x12288,4096x14336,4096x16384,4096x28672
for shape in rule 1:16:2 1:24:2; do
  e=""; [ $shape != rule ] && e="FP4GEMM_DECODE_SHAPE=$shape"
  env $e timeout 90 ./b/fp4gemm bench --backend cuda_decode --no-peers -m 1,4,8 --shapes $ks --json > $r/k-$shape.jsonl 2>> $r/bench.err
  echo "k $shape rc=$? s=$((SECONDS-start))" >> $r/progress.txt
  env $e timeout 60 ./b/fp4gemm bench --backend cuda_decode --no-peers -m 1,8 --shapes 3584x4096,3840x4096,4352x4096,3584x8192,3840x8192,4352x8192 --json > $r/n-$shape.jsonl 2>> $r/bench.err
  echo "n $shape rc=$? s=$((SECONDS-start))" >> $r/progress.txt
done
for shape in rule 1:16:2; do
  e=""; [ $shape != rule ] && e="FP4GEMM_DECODE_SHAPE=$shape"
  env $e timeout 60 ./b/fp4gemm bench --backend cuda_decode --no-peers -m 9,16 --shapes 4096x2048,4096x4096,4096x8192,4096x12288,4096x14336 --json > $r/m16-$shape.jsonl 2>> $r/bench.err
  echo "m16 $shape rc=$? s=$((SECONDS-start))" >> $r/progress.txt
done
timeout 240 compute-sanitizer --tool memcheck ./b/fp4gemm_gpu_tests --gtest_filter='CudaDecodeLaunchShapes.EveryCompiled*' > $r/memcheck.txt 2>&1; echo "memcheck rc=$? s=$((SECONDS-start))" >> $r/progress.txt
timeout 200 compute-sanitizer --tool racecheck ./b/fp4gemm_gpu_tests --gtest_filter='CudaDecodeLaunchShapes.EveryCompiled*' > $r/racecheck.txt 2>&1; echo "racecheck rc=$? s=$((SECONDS-start))" >> $r/progress.txt
