#!/usr/bin/env bash
# Session 23, call 5: ncu of one launch of the packed-activation prefill kernel (4096x4096 M = 512: 128 CTAs, one wave; and
# 28672x8192 M = 512), stall samples per SASS line.
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call5.tgz -C $r .; }
trap finish EXIT
start=$SECONDS
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
profile() {  # name n k m
  timeout 150 $ncu --clock-control none -k regex:prefill_gemm_kernel -c 1 --section SourceCounters --section WarpStateStats \
    --section SpeedOfLight --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis --section SchedulerStats --section LaunchStats --section Occupancy \
    -o $r/$1 ./b/fp4gemm bench --backend cuda_decode --no-peers -m $4 -n $2 -k $3 > $r/$1-run.txt 2>&1
  $ncu -i $r/$1.ncu-rep --page source --print-source sass --csv | gzip > $r/$1-sass.csv.gz
  $ncu -i $r/$1.ncu-rep --page details --print-details all > $r/$1-details.txt 2>&1
  rm -f $r/$1.ncu-rep
  echo "ncu $1 s=$((SECONDS-start))" >> $r/progress.txt
}
profile ncu-4096-m512 4096 4096 512
profile ncu-28672-m512 28672 8192 512
