#!/usr/bin/env bash
# Session 15, call 3 (build: 775bb93): where the kernel and auto rules stand with the new wgmma epilogue
# (wgmma vs mma.sync, cuda_decode vs dequantize + cuBLAS at M = 33-64 on small and mid weights), and
# what the mma.sync kernel's epilogue costs (mmanostore: its output stores skipped). One archive back.
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
for v in mmanostore; do gunzip -c out-carry/var/fp4gemm_$v.gz > b/fp4gemm_$v; chmod +x b/fp4gemm_$v; done
cp b/fp4gemm b/fp4gemm_tip
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call3.tgz -C $r .; }
trap finish EXIT
start=$SECONDS
one() {  # variant label file m shapes [args/env...]
  local v=$1 label=$2 file=$3 m=$4 shapes=$5 backend=$6; shift 6
  timeout 150 env "$@" ./b/fp4gemm_$v bench --backend $backend --no-peers -m $m --shapes $shapes --json 2>>$r/err.txt \
    | sed "s/^{/{\"variant\":\"$label\",/" >> $r/$file.jsonl
  echo "$label $file $m $shapes s=$((SECONDS-start))" >> $r/progress.txt
}
issue=4096x4096,4096x12288,12288x4096,28672x8192
for v in tip mmanostore tip mmanostore; do one $v $v mmaepi 1,4,16 $issue cuda_decode X=1; done
small=1024x4096,2048x2048,2048x4096,2048x8192,4096x1024,4096x2048,4096x4096,4096x8192,6144x4096,8192x1024,8192x2048,8192x4096,10240x4096,12288x4096,16384x1024,16384x2048
one tip wgmma kernels 33,48,64 $small cuda_decode FP4GEMM_DECODE_KERNEL=wgmma
one tip mma kernels 33,48,64 $small cuda_decode FP4GEMM_DECODE_KERNEL=mma
one tip decode auto 33,48,64 $small cuda_decode FP4GEMM_DECODE_KERNEL=wgmma
one tip dequant auto 33,48,64 $small cuda_dequant_cublas X=1
echo "done s=$((SECONDS-start))" >> $r/progress.txt
