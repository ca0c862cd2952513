#!/usr/bin/env bash
# Session 13, call 7 (the build of call 6: one CTA per SM for wgmma grids that fit the SMs): compute-sanitizer
# racecheck and memcheck on the wgmma tests of the rule's shapes (small grids: the one-CTA-per-SM launch).
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call7.tgz -C $r .; }
trap finish EXIT
start=$SECONDS
san=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
for tool in racecheck memcheck; do
  timeout 85 $san --tool $tool ./b/fp4gemm_gpu_tests --gtest_brief=1 \
    --gtest_filter='CudaDecodeWgmma.EveryActivationAndOutputType:CudaDecodeWgmma.OddActivationAndOutputRowStrides' > $r/$tool.txt 2>&1
  echo "rc=$? s=$((SECONDS-start))" >> $r/$tool.txt
done
