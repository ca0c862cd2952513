#!/usr/bin/env bash
# Session 24, call 2: prefill variants pf1 (prefetch.global.L1 one chunk beyond the loaded one),
# pf2 (two beyond, 14 record stages, carveout 85%) and same (always chunk 0's fragments: a ceiling,
# wrong results): prefill tests of pf1/pf2, bench against the tip.
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
for v in fp4gemm_pf1 gpu_tests_pf1 fp4gemm_pf2 gpu_tests_pf2 fp4gemm_same; do gunzip -c out-carry/var/$v.gz > b/$v; chmod +x b/$v; done
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call2.tgz -C $r .; }
trap finish EXIT
start=$SECONDS
for v in pf1 pf2; do
  timeout 40 ./b/gpu_tests_$v --gtest_filter='CudaDecodeWgmma.Prefill*' > $r/prefill-tests-$v.txt 2>&1; echo "$v tests rc=$? s=$((SECONDS-start))" >> $r/progress.txt
done
for rep in 1 2; do
for v in fp4gemm fp4gemm_pf1 fp4gemm_pf2 fp4gemm_same; do
  timeout 60 ./b/$v bench --backend cuda_decode --no-peers -m 128,512 --shapes 4096x4096,28672x8192 --json 2>>$r/err.txt \
    | sed "s/^{/{\"variant\":\"$v\",\"rep\":$rep,/" >> $r/ab.jsonl
  timeout 60 ./b/$v bench --backend cuda_decode --no-peers -m 512 --shapes 12288x4096 --json 2>>$r/err.txt \
    | sed "s/^{/{\"variant\":\"$v\",\"rep\":$rep,/" >> $r/ab.jsonl
  echo "bench $v s=$((SECONDS-start))" >> $r/progress.txt
done
done
