#!/usr/bin/env bash
# Session 12, call 2: two rounds except 4-tile and 4-warp tile-pair CTAs, and the wave rule: GPU tests, A/B against the tip's CLI.
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
start=$SECONDS
timeout 200 ./b/fp4gemm_gpu_tests --gtest_brief=1 > $OUT/gpu-tests.txt 2>&1; echo "rc=$? s=$((SECONDS-start))" >> $OUT/gpu-tests.txt
ab() {  # n k ms
  for bin in base new; do
    cli=./b/fp4gemm; [ $bin = base ] && cli=./out-carry/base/fp4gemm
    $cli bench --backend cuda_decode --no-peers -m $3 -n $1 -k $2 --json 2>>$OUT/ab-err.txt | sed "s/^{/{\"bin\":\"$bin\",/" >> $OUT/ab.jsonl
  done
  echo "$1 $2 done s=$((SECONDS-start))" >> $OUT/progress.txt
}
ab 4096 4096 1,4,16; ab 12288 4096 1,4,16; ab 4096 12288 1,4,16; ab 28672 8192 1,4,16
ab 8192 8192 1,16,32; ab 14336 4096 1,16; ab 10240 8192 1,16; ab 8192 28672 1,16
ab 18432 4096 1,16; ab 7168 7168 1,32; ab 12288 12288 16; ab 16384 4096 1; ab 3072 4096 32; ab 13824 5120 1
for nk in "8192 8192 1" "14336 4096 1" "18432 4096 16" "8192 8192 32"; do
  read -r n k m <<< "$nk"; echo "== $n x $k M=$m" >> $OUT/explain.txt; ./b/fp4gemm explain -m $m -n $n -k $k 2>&1 | grep kernel >> $OUT/explain.txt
done
