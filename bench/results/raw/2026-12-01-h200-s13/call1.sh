#!/usr/bin/env bash
# Session 13, call 1 (build 347d5cc + ring-depth variants of sm90_wgmma_gemm.cu: 4 and 6 stages, relinked CLIs by
# build_variant.sh): GPU suite on the tip; wgmma shape x ring depth sweep at M = 32, 64; ncu source view of the 2:1 CTA.
# The sweep's jsonl and the 2:1 SASS CSV did not come back: the device tool returns at most 8 files, and this call
# wrote them as separate files (later calls pack everything into one archive).
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
gunzip -c out-carry/var/fp4gemm_s4.gz > b/fp4gemm_s4; gunzip -c out-carry/var/fp4gemm_s6.gz > b/fp4gemm_s6; chmod +x b/fp4gemm_s*
cp b/fp4gemm b/fp4gemm_s8
start=$SECONDS
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $OUT/gpu.txt
timeout 200 ./b/fp4gemm_gpu_tests --gtest_brief=1 > $OUT/gpu-tests.txt 2>&1; echo "rc=$? s=$((SECONDS-start))" >> $OUT/gpu-tests.txt
sweep() {  # n k
  for v in s8 s6 s4; do
    ./b/fp4gemm_$v bench --backend cuda_decode --no-peers -m 32,64 -n $1 -k $2 --json 2>>$OUT/err.txt | sed "s/^{/{\"variant\":\"$v\",\"shape\":\"rule\",/" >> $OUT/sweep.jsonl
    for s in 1:1 1:2 1:4 2:1 2:2 2:4; do
      FP4GEMM_DECODE_KERNEL=wgmma FP4GEMM_WGMMA_SHAPE=$s ./b/fp4gemm_$v bench --backend cuda_decode --no-peers -m 32,64 -n $1 -k $2 --json 2>>$OUT/err.txt | sed "s/^{/{\"variant\":\"$v\",\"shape\":\"$s\",/" >> $OUT/sweep.jsonl
    done
  done
  echo "$1x$2 s=$((SECONDS-start))" >> $OUT/progress.txt
}
sweep 12288 4096; sweep 28672 8192; sweep 4096 12288; sweep 8192 8192; sweep 4096 4096
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
profile() {  # name shape
  FP4GEMM_DECODE_KERNEL=wgmma FP4GEMM_WGMMA_SHAPE=$2 timeout 120 $ncu --clock-control none -k regex:wgmma_gemm_kernel -c 1 --section SourceCounters --section WarpStateStats --section InstructionStats --section Occupancy --section SpeedOfLight --section MemoryWorkloadAnalysis \
    -o $OUT/$1 ./b/fp4gemm bench --backend cuda_decode --no-peers -m 64 -n 12288 -k 4096 > $OUT/$1-run.txt 2>&1
  $ncu -i $OUT/$1.ncu-rep --page source --print-source sass --csv | gzip > $OUT/$1-sass.csv.gz
  $ncu -i $OUT/$1.ncu-rep --page details --print-details all > $OUT/$1-details.txt 2>&1
  rm -f $OUT/$1.ncu-rep
}
profile ncu-2x1 2:1
profile ncu-1x1 1:1
echo "done s=$((SECONDS-start))" >> $OUT/progress.txt
