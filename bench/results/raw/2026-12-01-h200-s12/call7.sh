#!/usr/bin/env bash
# Session 12, call 7: the wgmma consumer loop with its shared addresses pinned and the multicast arrive loop not unrolled:
# wgmma/resident GPU tests, then A/B against 9f767a5's CLI (same kernels as 49ddd37).
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
start=$SECONDS
timeout 120 ./b/fp4gemm_gpu_tests --gtest_brief=1 --gtest_filter='CudaDecodeWgmma.*:*cuda_decode*' > $OUT/gpu-tests.txt 2>&1; echo "rc=$? s=$((SECONDS-start))" >> $OUT/gpu-tests.txt
ab() {  # n k ms
  for bin in base new base new; do
    cli=./b/fp4gemm; [ $bin = base ] && cli=./out-carry/base/fp4gemm
    $cli bench --backend cuda_decode --no-peers -m $3 -n $1 -k $2 --json 2>>$OUT/ab-err.txt | sed "s/^{/{\"bin\":\"$bin\",/" >> $OUT/ab.jsonl
  done
  echo "$1 $2 s=$((SECONDS-start))" >> $OUT/progress.txt
}
ab 12288 4096 1,16,64; ab 28672 8192 17,32,64; ab 8192 8192 64; ab 14336 4096 64
