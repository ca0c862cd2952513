#!/usr/bin/env bash
# Session 22, call 8: the one-activation-tile kernels with the scale applied after the MMA
# (`scaleafter`: scaleafter.patch applied to sm90_decode_gemm.cu of 3eb92eb; valid
# for M <= 2 only, an experiment): the GPU tests linked to it (M = 3-8 are expected to fail), then
# tip vs scaleafter at M = 1 and 2.
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call8.tgz -C $r .; }
trap finish EXIT
start=$SECONDS
timeout 200 ./b/gpu_tests_scaleafter --gtest_filter='CudaDecodeLaunchShapes.EveryCompiledShapeMatchesTheReference:CudaDecodeChainedCalls.*:All/CudaBackend.*/cuda_decode' > $r/gpu-tests-scaleafter.txt 2>&1; echo "tests rc=$? s=$((SECONDS-start))" >> $r/progress.txt
bench() {  # variant binary shapes m
  timeout 150 ./b/$2 bench --backend cuda_decode --no-peers -m $4 --shapes $3 --json 2>>$r/err.txt | sed "s/^{/{\"variant\":\"$1\",/" >> $r/ab.jsonl
}
S=4096x4096,4096x12288,12288x4096,28672x8192,8192x4096,8192x8192
for rep in 1 2 3; do
  bench tip fp4gemm $S 1,2
  bench scaleafter fp4gemm_scaleafter $S 1,2
  echo "rep $rep s=$((SECONDS-start))" >> $r/progress.txt
done
