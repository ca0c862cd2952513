#!/usr/bin/env bash
# Session 27, call 6: ncu stall sampling per SASS line of the tip's mma.sync kernel (a2d4744's
# kernels, b/fp4gemm_base) on 12288x4096 at M = 32 (four tiles) and M = 17 (three), one launch each.
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
gunzip -c out-carry/fp4gemm_base.gz > b/fp4gemm_base; chmod +x b/fp4gemm_base
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call6.tgz -C $r .; }
trap finish EXIT
start=$SECONDS
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
profile() {  # name m
  FP4GEMM_DECODE_KERNEL=mma timeout 150 $ncu --clock-control none -k regex:decode_gemm_kernel -c 1 --section SourceCounters \
    --section WarpStateStats --section SpeedOfLight --section Occupancy --section LaunchStats \
    -o $r/ncu-$1 ./b/fp4gemm_base bench --backend cuda_decode --no-peers -m $2 -n 12288 -k 4096 > $r/ncu-$1-run.txt 2>&1
  $ncu -i $r/ncu-$1.ncu-rep --page source --print-source sass --csv | gzip > $r/ncu-$1-sass.csv.gz
  $ncu -i $r/ncu-$1.ncu-rep --page details --print-details all > $r/ncu-$1-details.txt 2>&1
  rm -f $r/ncu-$1.ncu-rep
  echo "ncu $1 s=$((SECONDS-start))" >> $r/progress.txt
}
profile m32 32
profile m17 17
