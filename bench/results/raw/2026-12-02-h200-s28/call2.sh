#!/usr/bin/env bash
# Session 28, call 2: ncu on the four-tile mma.sync kernel, one launch of 12288x4096 at M = 32
# (FP4GEMM_DECODE_KERNEL=mma), the tip's order (b/fp4gemm_base, 745ce19) against call 1's
# contiguous order (b/fp4gemm_contiguous, contiguous-k-order.patch): L1 requests, sectors and
# wavefronts of the global loads (memory workload tables, source counters, raw metrics).
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
for bin in fp4gemm_base fp4gemm_contiguous; do gunzip -c out-carry/$bin.gz > b/$bin; chmod +x b/$bin; done
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call2.tgz -C $r .; }
trap finish EXIT
start=$SECONDS
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
profile() {  # name binary
  FP4GEMM_DECODE_KERNEL=mma timeout 150 $ncu --clock-control none -k regex:decode_gemm_kernel -c 1 --section SpeedOfLight \
    --section MemoryWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables --section SourceCounters --section WarpStateStats \
    -o $r/ncu-$1 ./b/$2 bench --backend cuda_decode --no-peers -m 32 -n 12288 -k 4096 > $r/ncu-$1-run.txt 2>&1
  $ncu -i $r/ncu-$1.ncu-rep --page details --print-details all > $r/ncu-$1-details.txt 2>&1
  $ncu -i $r/ncu-$1.ncu-rep --page raw --csv > $r/ncu-$1-raw.csv 2>&1
  $ncu -i $r/ncu-$1.ncu-rep --page source --print-source sass --csv | gzip > $r/ncu-$1-sass.csv.gz
  rm -f $r/ncu-$1.ncu-rep
  echo "ncu $1 s=$((SECONDS-start))" >> $r/progress.txt
}
profile base fp4gemm_base
profile contiguous fp4gemm_contiguous
