#!/usr/bin/env bash
# Session 18, call 2: the wgmma kernel with two 64-row halves per warpgroup (each consumer warp
# decodes two tiles, its warpgroup issues both halves' wgmmas; FP4GEMM_WGMMA_SHAPE=1:S:1:2): its GPU
# tests, an A/B against the rule at M = 17-64, and the sanitizers on its epilogue test.
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call2.tgz -C $r .; }
trap finish EXIT
start=$SECONDS
timeout 150 ./b/fp4gemm_gpu_tests --gtest_brief=1 --gtest_filter='CudaDecodeWgmma.*' > $r/wgmma-tests.txt 2>&1; echo "rc=$? s=$((SECONDS-start))" >> $r/wgmma-tests.txt
echo "tests s=$((SECONDS-start))" >> $r/progress.txt
for s in 28672x8192 12288x4096 8192x8192 4096x12288 4096x4096; do
  ./b/fp4gemm explain -m 64 -n ${s%x*} -k ${s#*x} >> $r/explain.txt 2>&1
done
bench() {  # variant env shapes m
  timeout 100 env $2 ./b/fp4gemm bench --backend cuda_decode --no-peers -m $4 --shapes $3 --json 2>>$r/err.txt | sed "s/^{/{\"variant\":\"$1\",/" >> $r/ab.jsonl
}
shapes=28672x8192,12288x4096,8192x8192,4096x12288,4096x4096
for rep in 1 2; do
  bench rule X=1 $shapes 32,48,64
  for s in 1 2 4 8; do
    bench h$s FP4GEMM_DECODE_KERNEL=wgmma\ FP4GEMM_WGMMA_SHAPE=1:$s:1:2 $shapes 32,48,64
  done
  bench rule X=1 28672x8192,24576x4096,20480x4096 17,24
  bench h1 FP4GEMM_DECODE_KERNEL=wgmma\ FP4GEMM_WGMMA_SHAPE=1:1:1:2 28672x8192,24576x4096,20480x4096 17,24
done
echo "ab s=$((SECONDS-start))" >> $r/progress.txt
ncu=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null || echo ncu)
timeout 90 env FP4GEMM_DECODE_KERNEL=wgmma FP4GEMM_WGMMA_SHAPE=1:1:1:2 $ncu --clock-control none -k regex:wgmma_gemm_kernel -c 1 --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section Occupancy --section LaunchStats --section ComputeWorkloadAnalysis \
  ./b/fp4gemm bench --backend cuda_decode --no-peers -m 64 -n 28672 -k 8192 > $r/ncu-28672x8192.txt 2>&1
echo "ncu s=$((SECONDS-start))" >> $r/progress.txt
cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
timeout 120 $cs --tool memcheck --error-exitcode 9 ./b/fp4gemm_gpu_tests --gtest_brief=1 --gtest_filter='CudaDecodeWgmma.EveryOutputTypeThroughEachEpilogue' > $r/memcheck.txt 2>&1; echo "rc=$? s=$((SECONDS-start))" >> $r/memcheck.txt
timeout 120 $cs --tool racecheck --error-exitcode 9 ./b/fp4gemm_gpu_tests --gtest_brief=1 --gtest_filter='CudaDecodeWgmma.EveryOutputTypeThroughEachEpilogue' > $r/racecheck.txt 2>&1; echo "rc=$? s=$((SECONDS-start))" >> $r/racecheck.txt
echo "done s=$((SECONDS-start))" >> $r/progress.txt
