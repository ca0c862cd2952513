#!/usr/bin/env bash
# Session 12, call 6 (build 9f767a5): per-SASS-line stall sampling of the wgmma kernel (12288x4096 M = 64, the rule's 1:1)
# and of the mma.sync kernel (12288x4096 M = 1). The wgmma CSV did not come back (too many files) and was taken again
# in a second command: same ncu line, then `ncu -i w.ncu-rep --page source --print-source sass --csv | gzip`.
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
profile() {  # name kernel-regex m
  $ncu --clock-control none -k regex:$2 -c 1 --section SourceCounters --section WarpStateStats --section InstructionStats \
    -o $OUT/$1 ./b/fp4gemm bench --backend cuda_decode --no-peers -m $3 -n 12288 -k 4096 > $OUT/$1-run.txt 2>&1
  $ncu -i $OUT/$1.ncu-rep --page source --print-source sass --csv > $OUT/$1-sass.csv
  $ncu -i $OUT/$1.ncu-rep --page details --print-details all > $OUT/$1-details.txt 2>&1
}
profile wgmma-m64 wgmma_gemm_kernel 64
profile mma-m1 decode_gemm_kernel 1
