#!/usr/bin/env bash
# Session 12, call 1: two-round steady loop (raw/2026-12-01-h200-s11/two-round-steady-loop.patch on d03ba6f):
# GPU tests + A/B against the tip's CLI (clean-clone build of d03ba6f in out-carry/base), explain's waves text,
# off-grid sweep (ran out of the call's 590 s during 57344x8192's forced shapes; 18432x4096 and 4096x28672 not reached).
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $OUT/gpu.txt 2>&1
start=$SECONDS
timeout 200 ./b/fp4gemm_gpu_tests --gtest_brief=1 > $OUT/gpu-tests.txt 2>&1; echo "rc=$? s=$((SECONDS-start))" >> $OUT/gpu-tests.txt
for rep in 1 2; do
  for nk in "4096 4096" "12288 4096" "4096 12288" "28672 8192"; do
    read -r n k <<< "$nk"
    for bin in base new; do
      cli=./b/fp4gemm; [ $bin = base ] && cli=./out-carry/base/fp4gemm
      $cli bench --backend cuda_decode --no-peers -m 1,4,16 -n $n -k $k --json 2>>$OUT/ab-err.txt | sed "s/^{/{\"bin\":\"$bin\",\"rep\":$rep,/" >> $OUT/ab.jsonl
    done
  done
done
for nk in "4096 4096" "12288 4096" "8192 8192" "14336 4096" "28672 8192"; do
  read -r n k <<< "$nk"
  for m in 1 16; do echo "== $n x $k M=$m" >> $OUT/explain.txt; ./b/fp4gemm explain -m $m -n $n -k $k >> $OUT/explain.txt 2>&1; done
done
for w in "8192 8192" "14336 4096" "10240 8192" "8192 28672" "28672 4096" "57344 8192" "18432 4096" "4096 28672"; do
  WEIGHTS="$w" MS=1,16 bash out-carry/decode_shape_sweep.sh ./b/fp4gemm >> $OUT/sweep.jsonl
done
