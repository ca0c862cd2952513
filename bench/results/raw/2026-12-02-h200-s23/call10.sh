#!/usr/bin/env bash
# Session 23, call 10: the prefill kernel with CTAs of 256 weight rows (variant, named rr in the script:
# two n128 wgmmas per block, 4 decode warps in turn, setmaxnreg 96/208; linked into the
# tip's library): its GPU tests, memcheck and racecheck, then bench against the tip and the peers.
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
for v in fp4gemm_rr gpu_tests_rr; do gunzip -c out-carry/var/$v.gz > b/$v; chmod +x b/$v; done
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call10.tgz -C $r .; }
trap finish EXIT
start=$SECONDS
timeout 120 ./b/gpu_tests_rr --gtest_filter='CudaDecodeWgmma.Prefill*' > $r/prefill-tests.txt 2>&1; echo "tests rc=$? s=$((SECONDS-start))" >> $r/progress.txt
if grep -q "PASSED.*2 tests" $r/prefill-tests.txt; then
  timeout 120 compute-sanitizer --tool memcheck ./b/gpu_tests_rr --gtest_filter='CudaDecodeWgmma.PrefillKernelTakesEveryTypeAndStride' > $r/memcheck.txt 2>&1; echo "memcheck rc=$? s=$((SECONDS-start))" >> $r/progress.txt
  timeout 120 compute-sanitizer --tool racecheck ./b/gpu_tests_rr --gtest_filter='CudaDecodeWgmma.PrefillKernelTakesEveryTypeAndStride' > $r/racecheck.txt 2>&1; echo "racecheck rc=$? s=$((SECONDS-start))" >> $r/progress.txt
  timeout 200 ./b/fp4gemm_rr bench --backend cuda_decode -m 65,128,256,512,1024,4096 --shapes 4096x4096,4096x12288,12288x4096,28672x8192 --json > $r/rr.jsonl 2>>$r/err.txt; echo "bench rr rc=$? s=$((SECONDS-start))" >> $r/progress.txt
  timeout 60 ./b/fp4gemm bench --backend cuda_decode --no-peers -m 128,512 --shapes 4096x4096,28672x8192 --json > $r/tip.jsonl 2>>$r/err.txt; echo "bench tip rc=$? s=$((SECONDS-start))" >> $r/progress.txt
fi
