#!/usr/bin/env bash
# Session 13, call 3: does the wgmma kernel's throughput per SM grow with its CTAs per SM? Tip's kernel (b/fp4gemm_base,
# 8 stages, 2 CTAs of 1:1 per SM by shared memory) and a 6-stage build (b/fp4gemm_s6, 3 per SM). 1:1 grids of exactly
# 1, 2 and 3 CTAs per SM (N = 132, 264, 396 x 64 rows; K = 4096, M = 64 and 32), and 12288x4096 at 1:1 and 1:2.
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
for v in base s6; do gunzip -c out-carry/var/fp4gemm_$v.gz > b/fp4gemm_$v; chmod +x b/fp4gemm_$v; done
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call3.tgz -C $r .; }
trap finish EXIT
start=$SECONDS
one() {  # variant shape n k
  FP4GEMM_DECODE_KERNEL=wgmma FP4GEMM_WGMMA_SHAPE=$2 ./b/fp4gemm_$1 bench --backend cuda_decode --no-peers -m 32,64 -n $3 -k $4 --json 2>>$r/err.txt \
    | sed "s/^{/{\"variant\":\"$1\",\"shape\":\"$2\",/" >> $r/sweep.jsonl
  echo "$1 $2 $3x$4 s=$((SECONDS-start))" >> $r/progress.txt
}
one base 1:1 8448 4096; one base 1:1 16896 4096; one s6 1:1 8448 4096; one s6 1:1 16896 4096; one s6 1:1 25344 4096
one s6 1:1 12288 4096; one s6 1:2 12288 4096; one base 1:1 12288 4096
echo "done s=$((SECONDS-start))" >> $r/progress.txt
