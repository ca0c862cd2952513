#!/usr/bin/env bash
# Session 15, call 5. new = working tree (97c93b5 + the pack kernel with two 16-byte loads a thread);
# prepack = 97c93b5. One archive back.
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
for v in prepack; do gunzip -c out-carry/var/fp4gemm_$v.gz > b/fp4gemm_$v; chmod +x b/fp4gemm_$v; done
cp b/fp4gemm b/fp4gemm_new
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call5.tgz -C $r .; }
trap finish EXIT
start=$SECONDS
timeout 200 ./b/fp4gemm_gpu_tests --gtest_brief=1 --gtest_filter='CudaDecodeWgmma.*:CudaDecodeChained*' > $r/gpu-tests-wgmma.txt 2>&1; echo "rc=$? s=$((SECONDS-start))" >> $r/gpu-tests-wgmma.txt
one() {  # variant label file m shapes [env...]
  local v=$1 label=$2 file=$3 m=$4 shapes=$5; shift 5
  timeout 150 env "$@" ./b/fp4gemm_$v bench --backend cuda_decode --no-peers -m $m --shapes $shapes --json 2>>$r/err.txt \
    | sed "s/^{/{\"variant\":\"$label\",/" >> $r/$file.jsonl
  echo "$label $file $m $shapes s=$((SECONDS-start))" >> $r/progress.txt
}
for v in prepack new prepack new; do
  one $v $v lone 32,64 8448x1024,8448x16384 FP4GEMM_DECODE_KERNEL=wgmma FP4GEMM_WGMMA_SHAPE=1:1
  one $v $v rule 33,64 12288x4096,4096x12288,28672x8192,8192x8192,4096x4096,16384x4096 X=1
done
echo "done s=$((SECONDS-start))" >> $r/progress.txt
