#!/usr/bin/env bash
# Session 14, call 6 (build: 297b307; three/ring3 = three producer warps, full and ring alone; ring2 = two producers, ring alone).
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
for v in three ring3 ring2; do gunzip -c out-carry/var/fp4gemm_$v.gz > b/fp4gemm_$v; chmod +x b/fp4gemm_$v; done
cp b/fp4gemm b/fp4gemm_new
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call6.tgz -C $r .; }
trap finish EXIT
start=$SECONDS
one() {  # variant label file m shapes [env...]
  local v=$1 label=$2 file=$3 m=$4 shapes=$5; shift 5
  timeout 150 env "$@" ./b/fp4gemm_$v bench --backend cuda_decode --no-peers -m $m --shapes $shapes --json 2>>$r/err.txt \
    | sed "s/^{/{\"variant\":\"$label\",/" >> $r/$file.jsonl
  echo "$label $file $m $shapes s=$((SECONDS-start))" >> $r/progress.txt
}
W=FP4GEMM_DECODE_KERNEL=wgmma
for v in new three ring2 ring3 new three; do one $v $v lone 32,64 8448x1024,8448x4096,8448x16384 $W FP4GEMM_WGMMA_SHAPE=1:1; done
for v in new three; do one $v $v rule 32,64 12288x4096,28672x8192,4096x12288,8192x8192 X=1; done
timeout 200 ./b/fp4gemm_gpu_tests --gtest_brief=1 > $r/gpu-tests.txt 2>&1; echo "rc=$? s=$((SECONDS-start))" >> $r/gpu-tests.txt
echo "done s=$((SECONDS-start))" >> $r/progress.txt
