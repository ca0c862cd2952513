#!/usr/bin/env bash
# Session 15, call 4. new = working tree (557f687 + 4-warpgroup wgmma CTAs compiled + the mma.sync
# epilogue that sums all its outputs before storing); wg4 = the same without the mma.sync epilogue change.
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
for v in wg4; do gunzip -c out-carry/var/fp4gemm_$v.gz > b/fp4gemm_$v; chmod +x b/fp4gemm_$v; done
cp b/fp4gemm b/fp4gemm_new
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call4.tgz -C $r .; }
trap finish EXIT
start=$SECONDS
timeout 250 ./b/fp4gemm_gpu_tests --gtest_brief=1 > $r/gpu-tests.txt 2>&1; echo "rc=$? s=$((SECONDS-start))" >> $r/gpu-tests.txt
one() {  # variant label file m shapes [env...]
  local v=$1 label=$2 file=$3 m=$4 shapes=$5; shift 5
  timeout 150 env "$@" ./b/fp4gemm_$v bench --backend cuda_decode --no-peers -m $m --shapes $shapes --json 2>>$r/err.txt \
    | sed "s/^{/{\"variant\":\"$label\",/" >> $r/$file.jsonl
  echo "$label $file $m $shapes s=$((SECONDS-start))" >> $r/progress.txt
}
issue=4096x4096,4096x12288,12288x4096,28672x8192
for v in wg4 new wg4 new; do one $v $v mmaepi 1,9,16,24,32 $issue,14336x4096,8192x8192 FP4GEMM_DECODE_KERNEL=mma; done
W=FP4GEMM_DECODE_KERNEL=wgmma
shapes=12288x4096,28672x8192,8192x8192,4096x12288,16384x4096,6144x4096,8192x4096
one new rule wg4 33,64 $shapes X=1
for s in 4:1 4:2 4:4 2:1 2:2; do one new $s wg4 33,64 $shapes $W FP4GEMM_WGMMA_SHAPE=$s; done
one new rule wg4 33,64 $shapes X=1
echo "done s=$((SECONDS-start))" >> $r/progress.txt
