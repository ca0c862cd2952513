#!/usr/bin/env bash
# Session 23, call 6: the prefill kernel with 8 decode warps: its GPU tests (and the
# wgmma kernels' beside it), memcheck and racecheck on them, then cuda_decode (the prefill kernel)
# against cuda_dequant_cublas and the peers at M = 65-4096 on the issue weights.
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call6.tgz -C $r .; }
trap finish EXIT
start=$SECONDS
timeout 120 ./b/fp4gemm_gpu_tests --gtest_filter='CudaDecodeWgmma.Prefill*' > $r/prefill-tests.txt 2>&1; echo "prefill tests rc=$? s=$((SECONDS-start))" >> $r/progress.txt
if grep -q "PASSED.*2 tests" $r/prefill-tests.txt; then
  timeout 150 compute-sanitizer --tool memcheck ./b/fp4gemm_gpu_tests --gtest_filter='CudaDecodeWgmma.PrefillKernelTakesEveryTypeAndStride' > $r/memcheck.txt 2>&1; echo "memcheck rc=$? s=$((SECONDS-start))" >> $r/progress.txt
  timeout 150 compute-sanitizer --tool racecheck ./b/fp4gemm_gpu_tests --gtest_filter='CudaDecodeWgmma.PrefillKernelTakesEveryTypeAndStride' > $r/racecheck.txt 2>&1; echo "racecheck rc=$? s=$((SECONDS-start))" >> $r/progress.txt
  W=4096x4096,4096x12288,12288x4096,28672x8192
  timeout 200 ./b/fp4gemm bench --backend cuda_decode -m 65,128,256,512,1024,2048,4096 --shapes $W --json > $r/prefill.jsonl 2>>$r/err.txt; echo "bench prefill rc=$? s=$((SECONDS-start))" >> $r/progress.txt
  timeout 150 ./b/fp4gemm bench --backend cuda_dequant_cublas --no-peers -m 65,128,256,512,1024,2048,4096 --shapes $W --json > $r/dequant.jsonl 2>>$r/err.txt; echo "bench dequant rc=$? s=$((SECONDS-start))" >> $r/progress.txt
fi
timeout 100 ./b/fp4gemm_gpu_tests --gtest_filter='CudaDecodeWgmma.*' > $r/wgmma-tests.txt 2>&1; echo "wgmma tests rc=$? s=$((SECONDS-start))" >> $r/progress.txt
