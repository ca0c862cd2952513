#!/usr/bin/env bash
# Session 22, call 2: do the three- and four-tile mma.sync kernels (M = 17-32) lack weight bytes in
# flight? `deep34`: their register ring 4 chunks deep instead of 2 (deep34.sed; 160-166 registers
# against 127-138, the bounded four-tile form spills 268 bytes). mma.sync forced, tip vs deep34.
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call2.tgz -C $r .; }
trap finish EXIT
start=$SECONDS
bench() {  # variant binary shapes m
  timeout 150 env FP4GEMM_DECODE_KERNEL=mma ./b/$2 bench --backend cuda_decode --no-peers -m $4 --shapes $3 --json 2>>$r/err.txt | sed "s/^{/{\"variant\":\"$1\",/" >> $r/ab.jsonl
}
S=4096x4096,4096x12288,12288x4096,28672x8192,16384x4096,8192x8192,6144x4096
for rep in 1 2; do
  bench tip fp4gemm $S 17,24,25,32
  bench deep34 fp4gemm_deep34 $S 17,24,25,32
  echo "rep $rep s=$((SECONDS-start))" >> $r/progress.txt
done
