#!/usr/bin/env bash
# Session 24, call 6: the build of 283722f: the whole GPU suite, memcheck/racecheck of the prefill
# test, fp4gemm doctor (text and JSON), explain at M = 48 and 256, and the prefill bench with peers.
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call6.tgz -C $r .; }
trap finish EXIT
start=$SECONDS
timeout 200 ./b/fp4gemm_gpu_tests > $r/gpu-tests.txt 2>&1; echo "suite rc=$? s=$((SECONDS-start))" >> $r/progress.txt
timeout 60 compute-sanitizer --tool memcheck ./b/fp4gemm_gpu_tests --gtest_filter='CudaDecodeWgmma.PrefillKernelTakesEveryTypeAndStride' > $r/memcheck.txt 2>&1; echo "memcheck rc=$? s=$((SECONDS-start))" >> $r/progress.txt
timeout 60 compute-sanitizer --tool racecheck ./b/fp4gemm_gpu_tests --gtest_filter='CudaDecodeWgmma.PrefillKernelTakesEveryTypeAndStride' > $r/racecheck.txt 2>&1; echo "racecheck rc=$? s=$((SECONDS-start))" >> $r/progress.txt
timeout 60 ./b/fp4gemm doctor > $r/doctor.txt 2>&1; echo "doctor rc=$? s=$((SECONDS-start))" >> $r/progress.txt
timeout 60 ./b/fp4gemm doctor --json > $r/doctor.json 2>&1; echo "doctor json rc=$? s=$((SECONDS-start))" >> $r/progress.txt
for m in 48 256; do timeout 30 ./b/fp4gemm explain -m $m -n 28672 -k 8192 > $r/explain-m$m.txt 2>&1; done
timeout 100 ./b/fp4gemm bench --backend cuda_decode -m 65,128,512,4096 --shapes 4096x4096,12288x4096,28672x8192 --json > $r/bench.jsonl 2>>$r/err.txt
echo "bench s=$((SECONDS-start))" >> $r/progress.txt
