#!/usr/bin/env bash
# Session 21, call 1: two wgmma groups in flight (f2s6, f2s12) against the tip's one (base).
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call1.tgz -C $r .; }
trap finish EXIT
start=$SECONDS
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $r/gpu.txt 2>&1
for v in f2s6 f2s12; do
  timeout 150 ./b/gpu_tests_$v --gtest_filter='CudaDecodeWgmma.*:CudaDecodeChainedCalls.*' > $r/tests-$v.txt 2>&1; echo "tests $v rc=$? s=$((SECONDS-start))" >> $r/progress.txt
done
bench() {  # variant binary shapes m
  timeout 90 ./b/$2 bench --backend cuda_decode --no-peers -m $4 --shapes $3 --json 2>>$r/err.txt | sed "s/^{/{\"variant\":\"$1\",/" >> $r/ab.jsonl
}
S=12288x4096,16384x4096,4096x12288,10240x8192,28672x8192,4096x4096,8192x8192
for rep in 1 2; do
  for v in base:fp4gemm f2s6:fp4gemm_f2s6 f2s12:fp4gemm_f2s12; do
    bench ${v%%:*} ${v#*:} $S 17,32,48,64
  done
  echo "rep $rep s=$((SECONDS-start))" >> $r/progress.txt
done
echo "done s=$((SECONDS-start))" >> $r/progress.txt
