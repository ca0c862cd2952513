#!/usr/bin/env bash
# Session 13, call 6 (build: 347d5cc + one CTA per SM for wgmma grids that fit the SMs; b/fp4gemm_base = the tip's
# kernel and launcher). wgmma GPU tests; A/B at M = 32, 64 with the tip also run with FP4GEMM_PDL=0. One archive back.
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
gunzip -c out-carry/var/fp4gemm_base.gz > b/fp4gemm_base; chmod +x b/fp4gemm_base; cp b/fp4gemm b/fp4gemm_new
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call6.tgz -C $r .; }
trap finish EXIT
start=$SECONDS
timeout 120 ./b/fp4gemm_gpu_tests --gtest_brief=1 --gtest_filter='CudaDecodeWgmma.*:CudaDecodeLaunch*:CudaDecodeChained*' > $r/gpu-tests-wgmma.txt 2>&1; echo "rc=$? s=$((SECONDS-start))" >> $r/gpu-tests-wgmma.txt
one() {  # variant label shape n k [env...]
  local v=$1 label=$2 shape=$3 n=$4 k=$5; shift 5
  if [ "$shape" = rule ]; then
    env "$@" ./b/fp4gemm_$v bench --backend cuda_decode --no-peers -m 32,64 -n $n -k $k --json 2>>$r/err.txt
  else
    env "$@" FP4GEMM_DECODE_KERNEL=wgmma FP4GEMM_WGMMA_SHAPE=$shape ./b/fp4gemm_$v bench --backend cuda_decode --no-peers -m 32,64 -n $n -k $k --json 2>>$r/err.txt
  fi | sed "s/^{/{\"variant\":\"$label\",\"shape\":\"$shape\",/" >> $r/ab.jsonl
  echo "$label $shape ${n}x$k s=$((SECONDS-start))" >> $r/progress.txt
}
for s in "rule 8192 8192" "1:1 8448 4096" "2:1 12288 4096" "rule 8192 28672"; do
  set -- $s
  one base base $1 $2 $3 X=1; one base base-pdl0 $1 $2 $3 FP4GEMM_PDL=0; one new new $1 $2 $3 X=1
done
one new new rule 12288 4096 X=1; one base base rule 12288 4096 X=1; one new new rule 28672 8192 X=1
echo "done s=$((SECONDS-start))" >> $r/progress.txt
