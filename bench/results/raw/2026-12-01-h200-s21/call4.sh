#!/usr/bin/env bash
# Session 21, call 4: the build with two-per-SM stream-K for 16/32 tokens (stream_k_ctas_per_sm) and
# the crowded-grid rule: whole GPU suite, sanitizers on the stream-K tests, A/B against the
# data-parallel grid (STREAM=0) and one stream-K CTA per SM (STREAM=132), then the issue table.
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call4.tgz -C $r .; }
trap finish EXIT
start=$SECONDS
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.sm,driver_version --format=csv > $r/gpu.txt 2>&1
timeout 200 ./b/fp4gemm_gpu_tests --gtest_brief=1 > $r/gpu-tests.txt 2>&1; echo "rc=$? s=$((SECONDS-start))" >> $r/gpu-tests.txt
echo "suite s=$((SECONDS-start))" >> $r/progress.txt
bench() {  # variant env shapes m
  timeout 120 env $2 ./b/fp4gemm bench --backend cuda_decode --no-peers -m $4 --shapes $3 --json 2>>$r/err.txt | sed "s/^{/{\"variant\":\"$1\",/" >> $r/ab.jsonl
}
S=28672x8192,14336x8192,57344x8192,24576x4096,20480x4096,10240x8192,12288x8192,5120x4096
for rep in 1 2; do
  bench rule X=1 $S 17,24,25,32
  bench dp FP4GEMM_WGMMA_STREAM=0 $S 17,24,25,32
  bench s132 "FP4GEMM_WGMMA_STREAM=132 FP4GEMM_DECODE_KERNEL=wgmma" $S 25,32
  echo "ab rep $rep s=$((SECONDS-start))" >> $r/progress.txt
done
timeout 150 ./b/fp4gemm bench -m 1,4,16,24,32,64 --shapes 4096x4096,4096x12288,12288x4096,28672x8192 --json > $r/issue-table.jsonl 2>>$r/err.txt
echo "table rc=$? s=$((SECONDS-start))" >> $r/progress.txt
cs=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null || echo compute-sanitizer)
for tool in memcheck racecheck; do
  timeout 120 $cs --tool $tool --error-exitcode 9 ./b/fp4gemm_gpu_tests --gtest_brief=1 --gtest_filter='CudaDecodeWgmma.StreamK*' > $r/$tool.txt 2>&1
  echo "rc=$? s=$((SECONDS-start))" >> $r/$tool.txt
done
echo "done s=$((SECONDS-start))" >> $r/progress.txt
