#!/usr/bin/env bash
# Session 23, call 7: the prefill kernel with deeper rings (sed variants of sm90_prefill_gemm.cu:
# rec12 = 12 record stages; deep = 12 record and 8 decoded stages) against the tip (6 and 4).
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
for v in rec12 deep; do gunzip -c out-carry/var/fp4gemm_$v.gz > b/fp4gemm_$v; chmod +x b/fp4gemm_$v; done
cp b/fp4gemm b/fp4gemm_tip
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call7.tgz -C $r .; }
trap finish EXIT
start=$SECONDS
for rep in 1 2; do
  for v in tip rec12 deep; do
    timeout 100 ./b/fp4gemm_$v bench --backend cuda_decode --no-peers -m 128,512 --shapes 4096x4096,28672x8192 --json 2>>$r/err.txt \
      | sed "s/^{/{\"variant\":\"$v\",/" >> $r/ab.jsonl
  done
  echo "rep $rep s=$((SECONDS-start))" >> $r/progress.txt
done
