#!/usr/bin/env bash
# Session 15, call 7 (build: the tip, see the results file): the whole GPU suite, compute-sanitizer on
# the mma.sync epilogue's every-shape test, the table with peers on the shapes, and the
# paired-split rule's weights against dequantize + cuBLAS. One archive back.
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call7.tgz -C $r .; }
trap finish EXIT
start=$SECONDS
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $r/gpu.txt 2>&1
timeout 250 ./b/fp4gemm_gpu_tests --gtest_brief=1 > $r/gpu-tests.txt 2>&1; echo "rc=$? s=$((SECONDS-start))" >> $r/gpu-tests.txt
timeout 120 ./b/fp4gemm bench -m 1,4,16,32,64 --shapes 4096x4096,4096x12288,12288x4096,28672x8192 --json > $r/table.jsonl 2>>$r/err.txt
echo "table s=$((SECONDS-start))" >> $r/progress.txt
paired=6144x8192,8192x8192,8192x16384,8192x28672
timeout 100 ./b/fp4gemm bench --backend cuda_decode --no-peers -m 33,64 --shapes $paired --json > $r/paired-decode.jsonl 2>>$r/err.txt
timeout 100 ./b/fp4gemm bench --backend cuda_dequant_cublas --no-peers -m 33,64 --shapes $paired --json > $r/paired-dequant.jsonl 2>>$r/err.txt
echo "paired s=$((SECONDS-start))" >> $r/progress.txt
cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
timeout 110 $cs --tool memcheck --error-exitcode 9 ./b/fp4gemm_gpu_tests --gtest_brief=1 --gtest_filter='CudaDecodeLaunchShapes.EveryCompiledShape*' > $r/memcheck.txt 2>&1; echo "rc=$? s=$((SECONDS-start))" >> $r/memcheck.txt
timeout 110 $cs --tool racecheck --error-exitcode 9 ./b/fp4gemm_gpu_tests --gtest_brief=1 --gtest_filter='CudaDecodeLaunchShapes.EveryCompiledShape*' > $r/racecheck.txt 2>&1; echo "rc=$? s=$((SECONDS-start))" >> $r/racecheck.txt
echo "done s=$((SECONDS-start))" >> $r/progress.txt
