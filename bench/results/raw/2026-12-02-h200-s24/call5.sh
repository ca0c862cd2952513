#!/usr/bin/env bash
# Session 24, call 5: owntb / ownfb (own-warp records with three / four fragment buffers and
# setmaxnreg): tests, memcheck, racecheck; bench against the tip and fb (tb left out: the carry limit), peers from the tip's run.
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
for v in fp4gemm_owntb gpu_tests_owntb fp4gemm_ownfb gpu_tests_ownfb fp4gemm_fb; do gunzip -c out-carry/var/$v.gz > b/$v; chmod +x b/$v; done
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call5.tgz -C $r .; }
trap finish EXIT
start=$SECONDS
variants="fp4gemm fp4gemm_fb"
for v in owntb ownfb; do
  timeout 40 ./b/gpu_tests_$v --gtest_filter='CudaDecodeWgmma.Prefill*' > $r/prefill-tests-$v.txt 2>&1; echo "$v tests rc=$? s=$((SECONDS-start))" >> $r/progress.txt
  grep -q "PASSED.*2 tests" $r/prefill-tests-$v.txt || continue
  variants="$variants fp4gemm_$v"
  timeout 60 compute-sanitizer --tool memcheck ./b/gpu_tests_$v --gtest_filter='CudaDecodeWgmma.PrefillKernelTakesEveryTypeAndStride' > $r/memcheck-$v.txt 2>&1; echo "$v memcheck rc=$? s=$((SECONDS-start))" >> $r/progress.txt
  timeout 60 compute-sanitizer --tool racecheck ./b/gpu_tests_$v --gtest_filter='CudaDecodeWgmma.PrefillKernelTakesEveryTypeAndStride' > $r/racecheck-$v.txt 2>&1; echo "$v racecheck rc=$? s=$((SECONDS-start))" >> $r/progress.txt
done
for v in $variants; do
  peers=--no-peers; [ $v = fp4gemm ] && peers=
  timeout 100 ./b/$v bench --backend cuda_decode $peers -m 65,128,512,4096 --shapes 4096x4096,12288x4096,28672x8192 --json 2>>$r/err.txt \
    | sed "s/^{/{\"variant\":\"$v\",/" >> $r/ab.jsonl
  echo "bench $v s=$((SECONDS-start))" >> $r/progress.txt
done
