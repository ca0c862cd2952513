#!/usr/bin/env bash
# Session 21, call 5: where the wgmma kernel (now two stream-K CTAs per SM at 32 tokens) beats the
# rule's mma.sync kernel at M = 17-32: wgmma forced against the rule, same binary.
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call5.tgz -C $r .; }
trap finish EXIT
start=$SECONDS
bench() {  # variant env shapes m
  timeout 120 env $2 ./b/fp4gemm bench --backend cuda_decode --no-peers -m $4 --shapes $3 --json 2>>$r/err.txt | sed "s/^{/{\"variant\":\"$1\",/" >> $r/ab.jsonl
}
S=16384x4096,20480x4096,24576x4096,20480x2048,28672x2048,16384x8192,14336x8192,10240x8192,12288x8192,8192x8192,12288x4096
for rep in 1 2; do
  bench rule X=1 $S 17,20,24,28,32
  bench wg FP4GEMM_DECODE_KERNEL=wgmma $S 17,20,24,28,32
  echo "rep $rep s=$((SECONDS-start))" >> $r/progress.txt
done
