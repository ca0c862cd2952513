#!/usr/bin/env bash
# Session 14, call 5 (build: 2640ea5 + plain grids for 1x1 clusters + two producer warps; tip = 2640ea5;
# ring2 = the new build with neither decode nor MMA). One archive back.
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
for v in tip ring2; do gunzip -c out-carry/var/fp4gemm_$v.gz > b/fp4gemm_$v; chmod +x b/fp4gemm_$v; done
cp b/fp4gemm b/fp4gemm_new
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call5.tgz -C $r .; }
trap finish EXIT
start=$SECONDS
timeout 150 ./b/fp4gemm_gpu_tests --gtest_brief=1 --gtest_filter='CudaDecodeWgmma.*:CudaDecodeLaunch*:CudaDecodeChained*' > $r/gpu-tests-wgmma.txt 2>&1; echo "rc=$? s=$((SECONDS-start))" >> $r/gpu-tests-wgmma.txt
one() {  # variant label file m shapes [env...]
  local v=$1 label=$2 file=$3 m=$4 shapes=$5; shift 5
  timeout 150 env "$@" ./b/fp4gemm_$v bench --backend cuda_decode --no-peers -m $m --shapes $shapes --json 2>>$r/err.txt \
    | sed "s/^{/{\"variant\":\"$label\",/" >> $r/$file.jsonl
  echo "$label $file $m $shapes s=$((SECONDS-start))" >> $r/progress.txt
}
W=FP4GEMM_DECODE_KERNEL=wgmma
lone=8448x1024,8448x4096,8448x16384
for v in tip new ring2 tip new; do one $v $v lone 32,64 $lone $W FP4GEMM_WGMMA_SHAPE=1:1; done
cross=2048x8192,4096x4096,4096x8192,4096x12288,4096x14336,6144x4096,8192x1024,8192x2048,8192x8192,16384x1024,16384x2048,14336x4096,12288x4096,28672x8192
for v in tip new; do one $v $v cross 17,32,33,64 $cross $W; done
one new mma cross 17,32,33,64 $cross FP4GEMM_DECODE_KERNEL=mma
for s in 2:1 1:2 2:2; do one new "new-$s" shapes 16,32,64 12288x4096,4096x12288,28672x8192 $W FP4GEMM_WGMMA_SHAPE=$s; done
echo "done s=$((SECONDS-start))" >> $r/progress.txt
