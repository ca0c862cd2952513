#!/usr/bin/env bash
# Session 14, call 3 (build: 2640ea5 = tip; variants: warprel, nocluster, ring, ringwarprel of the wgmma .cu;
# nopack, static of cuda_decode_backend_cuda.cpp; all = warprel + nocluster + static). One archive back.
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
vs="warprel nocluster nopack static all ringwarprel ring"
for v in $vs; do gunzip -c out-carry/var/fp4gemm_$v.gz > b/fp4gemm_$v; chmod +x b/fp4gemm_$v; done
cp b/fp4gemm b/fp4gemm_tip
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call3.tgz -C $r .; }
trap finish EXIT
start=$SECONDS
one() {  # variant label file m shapes [env...]
  local v=$1 label=$2 file=$3 m=$4 shapes=$5; shift 5
  timeout 90 env "$@" ./b/fp4gemm_$v bench --backend cuda_decode --no-peers -m $m --shapes $shapes --json 2>>$r/err.txt \
    | sed "s/^{/{\"variant\":\"$label\",/" >> $r/$file.jsonl
  echo "$label $file $m $shapes s=$((SECONDS-start))" >> $r/progress.txt
}
W="FP4GEMM_DECODE_KERNEL=wgmma"
for v in tip $vs tip; do
  one $v $v lone 32,64 8448x1024,8448x4096,8448x16384 $W FP4GEMM_WGMMA_SHAPE=1:1
  one $v $v rule 32,64 12288x4096,28672x8192,4096x12288 $W
done
echo "done s=$((SECONDS-start))" >> $r/progress.txt
