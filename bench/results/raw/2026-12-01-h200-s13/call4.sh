#!/usr/bin/env bash
# Session 13, call 4: two accumulator sets per consumer warpgroup in the wgmma kernel (b/ = this build, "acc2"),
# four for one-warpgroup CTAs (b/fp4gemm_acc4), the tip's kernel (b/fp4gemm_base). wgmma GPU tests on acc2, then
# benches at M = 32, 64. One archive back ($OUT/call4.tgz).
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
for v in base acc4; do gunzip -c out-carry/var/fp4gemm_$v.gz > b/fp4gemm_$v; chmod +x b/fp4gemm_$v; done
cp b/fp4gemm b/fp4gemm_acc2
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call4.tgz -C $r .; }
trap finish EXIT
start=$SECONDS
timeout 120 ./b/fp4gemm_gpu_tests --gtest_brief=1 --gtest_filter='CudaDecodeWgmma.*:CudaDecodeLaunch*:CudaDecodeChained*' > $r/gpu-tests-wgmma.txt 2>&1; echo "rc=$? s=$((SECONDS-start))" >> $r/gpu-tests-wgmma.txt
one() {  # variant shape n k
  if [ "$2" = rule ]; then
    ./b/fp4gemm_$1 bench --backend cuda_decode --no-peers -m 32,64 -n $3 -k $4 --json 2>>$r/err.txt
  else
    FP4GEMM_DECODE_KERNEL=wgmma FP4GEMM_WGMMA_SHAPE=$2 ./b/fp4gemm_$1 bench --backend cuda_decode --no-peers -m 32,64 -n $3 -k $4 --json 2>>$r/err.txt
  fi | sed "s/^{/{\"variant\":\"$1\",\"shape\":\"$2\",/" >> $r/sweep.jsonl
  echo "$1 $2 $3x$4 s=$((SECONDS-start))" >> $r/progress.txt
}
for v in base acc2 acc4; do one $v 1:1 8448 4096; one $v rule 12288 4096; one $v 1:2 12288 4096; done
one acc2 1:4 4096 12288; one acc4 1:4 4096 12288
for v in base acc2; do one $v rule 28672 8192; done
one acc2 rule 8192 8192
echo "done s=$((SECONDS-start))" >> $r/progress.txt
