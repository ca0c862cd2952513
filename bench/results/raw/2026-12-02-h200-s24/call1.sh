#!/usr/bin/env bash
# Session 24, call 1: the whole GPU suite on the tip (58a99f2), then the prefill variants tb (three
# fragment buffers, setmaxnreg 96/160) and fb (four, 88/168): tests, memcheck, racecheck, bench
# against the tip. Bundle: scripts/gpu_bundle.sh build-dev out-carry --archive;
# out-carry/var/{fp4gemm,gpu_tests}_{tb,fb}.gz
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
for v in fp4gemm_tb gpu_tests_tb fp4gemm_fb gpu_tests_fb; do gunzip -c out-carry/var/$v.gz > b/$v; chmod +x b/$v; done
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call1.tgz -C $r .; }
trap finish EXIT
start=$SECONDS
timeout 200 ./b/fp4gemm_gpu_tests > $r/gpu-tests.txt 2>&1; echo "suite rc=$? s=$((SECONDS-start))" >> $r/progress.txt
variants=fp4gemm
for v in tb fb; do
  timeout 40 ./b/gpu_tests_$v --gtest_filter='CudaDecodeWgmma.Prefill*' > $r/prefill-tests-$v.txt 2>&1; echo "$v tests rc=$? s=$((SECONDS-start))" >> $r/progress.txt
  grep -q "PASSED.*2 tests" $r/prefill-tests-$v.txt && variants="$variants fp4gemm_$v"
done
timeout 60 compute-sanitizer --tool memcheck ./b/gpu_tests_tb --gtest_filter='CudaDecodeWgmma.PrefillKernelTakesEveryTypeAndStride' > $r/memcheck-tb.txt 2>&1; echo "memcheck rc=$? s=$((SECONDS-start))" >> $r/progress.txt
timeout 60 compute-sanitizer --tool racecheck ./b/gpu_tests_tb --gtest_filter='CudaDecodeWgmma.PrefillKernelTakesEveryTypeAndStride' > $r/racecheck-tb.txt 2>&1; echo "racecheck rc=$? s=$((SECONDS-start))" >> $r/progress.txt
for v in $variants; do
  peers=--no-peers; [ $v = fp4gemm ] && peers=
  timeout 100 ./b/$v bench --backend cuda_decode $peers -m 65,128,512,4096 --shapes 4096x4096,12288x4096,28672x8192 --json 2>>$r/err.txt \
    | sed "s/^{/{\"variant\":\"$v\",/" >> $r/ab.jsonl
  echo "bench $v s=$((SECONDS-start))" >> $r/progress.txt
done
