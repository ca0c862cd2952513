#!/usr/bin/env bash
# Session 25, call 8: which part of the decode costs the prefill kernel's consumers ~20% a chunk.
# Variants of `tl` (timeline printed at the end of CTA (0,0,0)), values wrong, timing only: nst (the
# decode without its stmatrix writes), ntab (the decode with a constant scale, no table lookups).
# Unsplit 4096^2 and 4096x12288 at M = 128. Bundle: scripts/gpu_bundle.sh build-dev out-carry
# --archive; out-carry/var/*.gz
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
for v in tl nst ntab; do gunzip -c out-carry/var/fp4gemm_$v.gz > b/fp4gemm_$v; chmod +x b/fp4gemm_$v; done
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call8.tgz -C $r .; }
trap finish EXIT
start=$SECONDS
for v in tl nst ntab; do
  for shape in 4096x4096 4096x12288; do
    FP4GEMM_PREFILL_SPLITS=1 timeout 40 ./b/fp4gemm_$v bench --backend cuda_decode --no-peers -m 128 --shapes $shape > $r/x.txt 2>&1
    echo "$v $shape rc=$? s=$((SECONDS-start))" >> $r/progress.txt
    grep S25 $r/x.txt | tail -12 > $r/$v-$shape.tail; grep -v S25 $r/x.txt > $r/$v-$shape.bench; rm $r/x.txt
  done
done
