#!/usr/bin/env bash
# Session 24, call 4: prefill variants own (each decode warp copies its own records), ownsame (own +
# L1-hit loads, wrong values), u4/u8 (decode loop unrolled 4/8): own's tests, memcheck, racecheck;
# bench of all against the tip.
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
for v in fp4gemm_own gpu_tests_own fp4gemm_ownsame fp4gemm_u4 fp4gemm_u8; do gunzip -c out-carry/var/$v.gz > b/$v; chmod +x b/$v; done
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call4.tgz -C $r .; }
trap finish EXIT
start=$SECONDS
variants="fp4gemm fp4gemm_ownsame fp4gemm_u4 fp4gemm_u8"
timeout 40 ./b/gpu_tests_own --gtest_filter='CudaDecodeWgmma.Prefill*' > $r/prefill-tests-own.txt 2>&1; echo "own tests rc=$? s=$((SECONDS-start))" >> $r/progress.txt
if grep -q "PASSED.*2 tests" $r/prefill-tests-own.txt; then
  variants="$variants fp4gemm_own"
  timeout 60 compute-sanitizer --tool memcheck ./b/gpu_tests_own --gtest_filter='CudaDecodeWgmma.PrefillKernelTakesEveryTypeAndStride' > $r/memcheck-own.txt 2>&1; echo "memcheck rc=$? s=$((SECONDS-start))" >> $r/progress.txt
  timeout 60 compute-sanitizer --tool racecheck ./b/gpu_tests_own --gtest_filter='CudaDecodeWgmma.PrefillKernelTakesEveryTypeAndStride' > $r/racecheck-own.txt 2>&1; echo "racecheck rc=$? s=$((SECONDS-start))" >> $r/progress.txt
fi
for v in $variants; do
  timeout 60 ./b/$v bench --backend cuda_decode --no-peers -m 128,512 --shapes 4096x4096,28672x8192 --json 2>>$r/err.txt \
    | sed "s/^{/{\"variant\":\"$v\",/" >> $r/ab.jsonl
  timeout 60 ./b/$v bench --backend cuda_decode --no-peers -m 512 --shapes 12288x4096 --json 2>>$r/err.txt \
    | sed "s/^{/{\"variant\":\"$v\",/" >> $r/ab.jsonl
  echo "bench $v s=$((SECONDS-start))" >> $r/progress.txt
done
