#!/usr/bin/env bash
# Session 18, call 1: the warp-specialized wgmma kernel (WgmmaShape::specialized): its GPU tests,
# an A/B of its CTA shapes and K splits against the rule at M = 32 and 64, ncu on 28672x8192
# M = 64, and the sanitizers on its tests.
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call1.tgz -C $r .; }
trap finish EXIT
start=$SECONDS
nvidia-smi > $r/gpu.txt 2>&1
timeout 150 ./b/fp4gemm_gpu_tests --gtest_brief=1 --gtest_filter='CudaDecodeWgmma.*' > $r/wgmma-tests.txt 2>&1; echo "rc=$? s=$((SECONDS-start))" >> $r/wgmma-tests.txt
echo "tests s=$((SECONDS-start))" >> $r/progress.txt
bench() {  # variant env shapes m
  timeout 100 env $2 ./b/fp4gemm bench --backend cuda_decode --no-peers -m $4 --shapes $3 --json 2>>$r/err.txt | sed "s/^{/{\"variant\":\"$1\",/" >> $r/ab.jsonl
}
shapes=28672x8192,12288x4096,4096x12288,4096x4096,8192x8192
bench rule X=1 $shapes 32,64
for s in 2:1 2:2 2:4 1:1 1:2 1:4; do
  bench spec$s FP4GEMM_DECODE_KERNEL=wgmma\ FP4GEMM_WGMMA_SHAPE=$s:1:1 $shapes 32,64
done
bench rule X=1 $shapes 32,64
echo "ab s=$((SECONDS-start))" >> $r/progress.txt
ncu=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null || echo ncu)
timeout 90 env FP4GEMM_DECODE_KERNEL=wgmma FP4GEMM_WGMMA_SHAPE=2:1:1:1 $ncu --clock-control none -k regex:specialized -c 1 --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section Occupancy --section LaunchStats --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
  ./b/fp4gemm bench --backend cuda_decode --no-peers -m 64 -n 28672 -k 8192 > $r/ncu-28672x8192.txt 2>&1
echo "ncu s=$((SECONDS-start))" >> $r/progress.txt
cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
timeout 120 $cs --tool memcheck --error-exitcode 9 ./b/fp4gemm_gpu_tests --gtest_brief=1 --gtest_filter='CudaDecodeWgmma.EveryOutputTypeThroughEachEpilogue' > $r/memcheck.txt 2>&1; echo "rc=$? s=$((SECONDS-start))" >> $r/memcheck.txt
timeout 120 $cs --tool racecheck --error-exitcode 9 ./b/fp4gemm_gpu_tests --gtest_brief=1 --gtest_filter='CudaDecodeWgmma.EveryOutputTypeThroughEachEpilogue' > $r/racecheck.txt 2>&1; echo "rc=$? s=$((SECONDS-start))" >> $r/racecheck.txt
echo "done s=$((SECONDS-start))" >> $r/progress.txt
