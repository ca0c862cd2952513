#!/usr/bin/env bash
# Session 15, call 8. new = the working tree after review (K-split partials quad-major; pack alignment
# check; CPU/GPU bench weight helper); rowmajor = HEAD before it (partials lane-major). One archive back.
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
for v in rowmajor; do gunzip -c out-carry/var/fp4gemm_$v.gz > b/fp4gemm_$v; chmod +x b/fp4gemm_$v; done
cp b/fp4gemm b/fp4gemm_new
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call8.tgz -C $r .; }
trap finish EXIT
start=$SECONDS
timeout 200 ./b/fp4gemm_gpu_tests --gtest_brief=1 --gtest_filter='CudaDecodeWgmma.*:CudaDecodeChained*' > $r/gpu-tests-wgmma.txt 2>&1; echo "rc=$? s=$((SECONDS-start))" >> $r/gpu-tests-wgmma.txt
cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
for tool in racecheck memcheck; do
  timeout 100 $cs --tool $tool --error-exitcode 9 ./b/fp4gemm_gpu_tests --gtest_brief=1 --gtest_filter='CudaDecodeWgmma.EveryOutputType*' > $r/$tool.txt 2>&1; echo "rc=$? s=$((SECONDS-start))" >> $r/$tool.txt
done
one() {  # variant label file m shapes [env...]
  local v=$1 label=$2 file=$3 m=$4 shapes=$5; shift 5
  timeout 150 env "$@" ./b/fp4gemm_$v bench --backend cuda_decode --no-peers -m $m --shapes $shapes --json 2>>$r/err.txt \
    | sed "s/^{/{\"variant\":\"$label\",/" >> $r/$file.jsonl
  echo "$label $file $m $shapes s=$((SECONDS-start))" >> $r/progress.txt
}
split=4096x12288,4096x4096,8192x8192,8192x28672,2048x8192
for v in rowmajor new rowmajor new; do one $v $v split 33,64 $split X=1; done
# The paired split's upper bound: 8448 rows (66 two-CTA clusters on 132 SMs) forced 2:2 against the rule's 1:1.
one new rule-8448 bound 33,64 8448x8192,8448x16384 X=1
one new 2:2-8448 bound 33,64 8448x8192,8448x16384 FP4GEMM_DECODE_KERNEL=wgmma FP4GEMM_WGMMA_SHAPE=2:2
# The whole GPU bench path once on the new build (peers included).
timeout 60 ./b/fp4gemm bench -m 1,64 --shapes 4096x4096 --json > $r/smoke.jsonl 2>>$r/err.txt; echo "smoke rc=$? s=$((SECONDS-start))" >> $r/progress.txt
echo "done s=$((SECONDS-start))" >> $r/progress.txt
