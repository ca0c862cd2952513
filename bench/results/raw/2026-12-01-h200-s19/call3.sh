#!/usr/bin/env bash
# Session 19, call 3: (a) bulk_copy_rate (the ring alone: bytes and copies per stage, CTAs per SM,
# HBM or L2 source; built from bulk_copy_rate.cu); (b) "onecopy" (the wgmma kernel's 128-row CTAs
# copy a chunk's whole weight record, codes and scales, in one bulk copy instead of two) against
# base: its wgmma GPU tests and an A/B at M = 17-64.
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
gunzip -c out-carry/var/fp4gemm-base.gz > b/fp4gemm-base; chmod +x b/fp4gemm-base
gunzip -c out-carry/var/bulk_copy_rate.gz > b/bulk_copy_rate; chmod +x b/bulk_copy_rate
cp b/fp4gemm b/fp4gemm-onecopy
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call3.tgz -C $r .; }
trap finish EXIT
start=$SECONDS
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.sm --format=csv > $r/gpu.txt 2>&1
timeout 120 ./b/bulk_copy_rate > $r/bulk-copy-rate.jsonl 2>&1; echo "rate rc=$? s=$((SECONDS-start))" >> $r/progress.txt
timeout 150 ./b/fp4gemm_gpu_tests --gtest_brief=1 --gtest_filter='CudaDecodeWgmma.*' > $r/wgmma-tests.txt 2>&1; echo "rc=$? s=$((SECONDS-start))" >> $r/wgmma-tests.txt
echo "tests s=$((SECONDS-start))" >> $r/progress.txt
bench() {  # variant env shapes m
  timeout 120 env $2 ./b/fp4gemm-$1 bench --backend cuda_decode --no-peers -m $4 --shapes $3 --json 2>>$r/err.txt | sed "s/^{/{\"variant\":\"$1\",/" >> $r/ab.jsonl
}
S=4096x4096,4096x12288,12288x4096,28672x8192,8192x8192,16384x4096
for rep in 1 2; do
  for v in base onecopy; do bench $v X=1 $S 17,32,48,64; done
  echo "rep $rep s=$((SECONDS-start))" >> $r/progress.txt
done
echo "done s=$((SECONDS-start))" >> $r/progress.txt
