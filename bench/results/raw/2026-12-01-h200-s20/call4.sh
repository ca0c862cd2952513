#!/usr/bin/env bash
# Session 20, call 4: the tip's whole GPU suite, memcheck and racecheck on the stream-K tests, the
# issue-3 table (rule, peers), the stream-K rule against the data-parallel grid (FP4GEMM_WGMMA_STREAM=0)
# on six weights at M = 17-64, and session 19's `fp4gemm tune` call (profile kept).
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call4.tgz -C $r .; }
trap finish EXIT
start=$SECONDS
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.sm,driver_version --format=csv > $r/gpu.txt 2>&1
timeout 200 ./b/fp4gemm_gpu_tests --gtest_brief=1 > $r/gpu-tests.txt 2>&1; echo "rc=$? s=$((SECONDS-start))" >> $r/gpu-tests.txt
echo "suite s=$((SECONDS-start))" >> $r/progress.txt
cs=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null || echo compute-sanitizer)
for tool in memcheck racecheck; do
  timeout 100 $cs --tool $tool --error-exitcode 9 ./b/fp4gemm_gpu_tests --gtest_brief=1 --gtest_filter='CudaDecodeWgmma.StreamK*' > $r/$tool.txt 2>&1
  echo "rc=$? s=$((SECONDS-start))" >> $r/$tool.txt
done
echo "sanitizers s=$((SECONDS-start))" >> $r/progress.txt
timeout 150 ./b/fp4gemm bench -m 1,4,16,24,32,64 --shapes 4096x4096,4096x12288,12288x4096,28672x8192 --json > $r/issue-table.jsonl 2>>$r/err.txt
echo "table rc=$? s=$((SECONDS-start))" >> $r/progress.txt
bench() {  # variant env shapes m
  timeout 120 env $2 ./b/fp4gemm bench --backend cuda_decode --no-peers -m $4 --shapes $3 --json 2>>$r/err.txt | sed "s/^{/{\"variant\":\"$1\",/" >> $r/ab.jsonl
}
S=10240x8192,12288x4096,4096x12288,5120x4096,24576x4096,6144x4096
for rep in 1 2; do
  bench rule X=1 $S 17,24,32,33,48,64
  bench dp FP4GEMM_WGMMA_STREAM=0 $S 17,24,32,33,48,64
done
echo "ab s=$((SECONDS-start))" >> $r/progress.txt
timeout 280 ./b/fp4gemm tune --shapes 4096x4096,4096x12288,12288x4096,28672x8192 --json --out $r/h200-profile.json > $r/tune.jsonl 2> $r/tune.err
echo "tune rc=$? s=$((SECONDS-start))" >> $r/progress.txt
for m in 1 48 64 128 4096; do ./b/fp4gemm explain -m $m -n 4096 -k 4096 --profile $r/h200-profile.json >> $r/explain.txt 2>&1; done
echo "done s=$((SECONDS-start))" >> $r/progress.txt
