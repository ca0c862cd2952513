#!/usr/bin/env bash
# Session 13, call 2. Builds: b/ = this session's wgmma consumer steps of two chunks for one-warpgroup CTAs (P1);
# b/fp4gemm_base = the tip's (347d5cc) wgmma kernel; b/fp4gemm_p2 = two chunks per step for every CTA.
# wgmma GPU tests on P1; shape sweep at M = 32, 64. Everything returns in one archive ($OUT/call2.tgz).
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
for v in base p2; do gunzip -c out-carry/var/fp4gemm_$v.gz > b/fp4gemm_$v; chmod +x b/fp4gemm_$v; done
cp b/fp4gemm b/fp4gemm_p1
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call2.tgz -C $r .; }
trap finish EXIT
start=$SECONDS
timeout 150 ./b/fp4gemm_gpu_tests --gtest_brief=1 --gtest_filter='CudaDecodeWgmma.*:CudaDecodeLaunch*:CudaDecodeChained*' > $r/gpu-tests-wgmma.txt 2>&1; echo "rc=$? s=$((SECONDS-start))" >> $r/gpu-tests-wgmma.txt
one() {  # variant shape n k
  if [ "$2" = rule ]; then
    ./b/fp4gemm_$1 bench --backend cuda_decode --no-peers -m 32,64 -n $3 -k $4 --json 2>>$r/err.txt
  else
    FP4GEMM_DECODE_KERNEL=wgmma FP4GEMM_WGMMA_SHAPE=$2 ./b/fp4gemm_$1 bench --backend cuda_decode --no-peers -m 32,64 -n $3 -k $4 --json 2>>$r/err.txt
  fi | sed "s/^{/{\"variant\":\"$1\",\"shape\":\"$2\",/" >> $r/sweep.jsonl
  echo "$1 $2 $3x$4 s=$((SECONDS-start))" >> $r/progress.txt
}
for s in rule 1:1 1:2 2:1 2:2; do one base $s 12288 4096; done
for s in rule 1:2 1:4; do one p1 $s 12288 4096; done
for s in 2:1 2:2; do one p2 $s 12288 4096; done
one base rule 4096 12288; one base 1:4 4096 12288
for s in 1:2 1:4 1:8; do one p1 $s 4096 12288; done
one base rule 28672 8192; one p1 rule 28672 8192; one p1 1:1 28672 8192; one p1 1:2 28672 8192; one p2 2:1 28672 8192
one base rule 8192 8192; one p1 rule 8192 8192
echo "done s=$((SECONDS-start))" >> $r/progress.txt
