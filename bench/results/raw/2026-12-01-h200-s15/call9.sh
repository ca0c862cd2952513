#!/usr/bin/env bash
# Session 15, call 9 (the tip): the paired split at 64 and 96 chunks now that the split epilogue is
# cheaper (forced 2:2 against the rule), and the issue shapes' M = 32 and 64 rows with peers again.
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call9.tgz -C $r .; }
trap finish EXIT
start=$SECONDS
one() {  # label file m shapes [env...]
  local label=$1 file=$2 m=$3 shapes=$4; shift 4
  timeout 100 env "$@" ./b/fp4gemm bench --backend cuda_decode --no-peers -m $m --shapes $shapes --json 2>>$r/err.txt \
    | sed "s/^{/{\"variant\":\"$label\",/" >> $r/$file.jsonl
  echo "$label $file $m $shapes s=$((SECONDS-start))" >> $r/progress.txt
}
short=6144x4096,8192x4096,8448x4096,6144x6144,8192x6144
for rep in 1 2; do
  one rule short 33,64 $short FP4GEMM_DECODE_KERNEL=wgmma
  one 2:2 short 33,64 $short FP4GEMM_DECODE_KERNEL=wgmma FP4GEMM_WGMMA_SHAPE=2:2
done
timeout 100 ./b/fp4gemm bench -m 32,64 --shapes 4096x4096,4096x12288,12288x4096,28672x8192 --json > $r/table.jsonl 2>>$r/err.txt
echo "done s=$((SECONDS-start))" >> $r/progress.txt
