#!/usr/bin/env bash
# Session 16, call 3 (working tree: the M = 17-32 wgmma rule by SM fill and the row-pair CTA shape
# for four activation tiles): the whole GPU suite, then the new rule against the tip's CLI.
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
gunzip -c out-carry/var/fp4gemm_tip.gz > b/fp4gemm_tip; chmod +x b/fp4gemm_tip
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call3.tgz -C $r .; }
trap finish EXIT
start=$SECONDS
timeout 250 ./b/fp4gemm_gpu_tests --gtest_brief=1 > $r/gpu-tests.txt 2>&1; echo "rc=$? s=$((SECONDS-start))" >> $r/gpu-tests.txt
S=4096x4096,4096x12288,12288x4096,28672x8192,8192x8192,8192x4096,8192x16384,6144x8192,12288x8192,3072x4096,5120x4096,4096x2048,14336x4096
for rep in 1 2; do
  for cli in fp4gemm_tip fp4gemm; do
    timeout 200 ./b/$cli bench --backend cuda_decode --no-peers -m 16,17,24,32 --shapes $S --json 2>>$r/err.txt \
      | sed "s/^{/{\"variant\":\"$cli\",/" >> $r/ab.jsonl
    echo "$cli rep $rep s=$((SECONDS-start))" >> $r/progress.txt
  done
done
echo "done s=$((SECONDS-start))" >> $r/progress.txt
