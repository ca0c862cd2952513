#!/usr/bin/env bash
# Session 16, call 8 (ee892bb): (a) b16 (b16.patch: the four-tile kernel bounded to 128 registers,
# 8 bytes of spills, two 8-warp or four 4-warp CTAs per SM instead of one or three): its every-shape
# GPU test, then A/B against the tip at M = 25-32; (b) the tip's rule on 5120x4096 and 3072x4096 at
# M = 17-24 (half-K before row pairs up to 1.5 waves); (c) the issue table with peers.
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
for v in fp4gemm_b16 fp4gemm_gpu_tests_b16; do gunzip -c out-carry/var/$v.gz > b/$v; chmod +x b/$v; done
cp b/fp4gemm b/fp4gemm_tip
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call8.tgz -C $r .; }
trap finish EXIT
start=$SECONDS
timeout 150 ./b/fp4gemm_gpu_tests_b16 --gtest_brief=1 --gtest_filter='CudaDecodeLaunchShapes.*' > $r/gpu-tests-b16.txt 2>&1; echo "rc=$? s=$((SECONDS-start))" >> $r/gpu-tests-b16.txt
S=4096x4096,4096x12288,12288x4096,6144x8192,12288x8192,10240x8192,2048x8192,3072x4096,5120x4096,6144x4096,4096x2048
for rep in 1 2; do
  for v in tip b16; do
    timeout 200 ./b/fp4gemm_$v bench --backend cuda_decode --no-peers -m 25,32 --shapes $S --json 2>>$r/err.txt \
      | sed "s/^{/{\"variant\":\"$v\",/" >> $r/ab.jsonl
    echo "$v rep $rep s=$((SECONDS-start))" >> $r/progress.txt
  done
done
timeout 100 ./b/fp4gemm_tip bench --backend cuda_decode --no-peers -m 17,20,24 --shapes 5120x4096,3072x4096 --json > $r/rule-check.jsonl 2>>$r/err.txt
echo "rule check s=$((SECONDS-start))" >> $r/progress.txt
timeout 250 ./b/fp4gemm_tip bench -m 1,4,16,24,32,64 --shapes 4096x4096,4096x12288,12288x4096,28672x8192 --json > $r/table.jsonl 2>>$r/err.txt
echo "table s=$((SECONDS-start))" >> $r/progress.txt
echo "done s=$((SECONDS-start))" >> $r/progress.txt
