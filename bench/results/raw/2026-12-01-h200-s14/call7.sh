#!/usr/bin/env bash
# Session 14, call 7 (build: 297b307): the table with peers, cuda_decode against dequantize + cuBLAS at
# M = 33..64, compute-sanitizer racecheck and memcheck on the wgmma tests. One archive back.
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call7.tgz -C $r .; }
trap finish EXIT
start=$SECONDS
timeout 150 ./b/fp4gemm bench -m 1,4,16,32,64 --shapes 4096x4096,4096x12288,12288x4096,28672x8192 --json > $r/table.jsonl 2>$r/table-err.txt
echo "table s=$((SECONDS-start))" >> $r/progress.txt
timeout 170 ./b/fp4gemm bench -m 33,48,64 --shapes 4096x8192,6144x4096,8192x8192,14336x4096,16384x4096,20480x8192,24576x8192,8192x28672 --json > $r/m33-64.jsonl 2>$r/m33-64-err.txt
echo "m33-64 s=$((SECONDS-start))" >> $r/progress.txt
san=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
for tool in racecheck memcheck; do
  timeout 60 $san --tool $tool ./b/fp4gemm_gpu_tests --gtest_brief=1 \
    --gtest_filter='CudaDecodeWgmma.EveryActivationAndOutputType:CudaDecodeWgmma.OddActivationAndOutputRowStrides' > $r/$tool.txt 2>&1
  echo "rc=$? s=$((SECONDS-start))" >> $r/$tool.txt
done
left=$((560 - SECONDS + start))
[ $left -gt 20 ] && timeout $left $san --tool racecheck ./b/fp4gemm_gpu_tests --gtest_brief=1 \
    --gtest_filter='CudaDecodeWgmma.EveryCompiledShapeAndSplitMatchesTheReference' > $r/racecheck-shapes.txt 2>&1
echo "rc=$? s=$((SECONDS-start))" >> $r/racecheck-shapes.txt
echo "done s=$((SECONDS-start))" >> $r/progress.txt
