#!/usr/bin/env bash
# Session 15, call 2: the new wgmma epilogue (stores from registers; K splits summed per quad).
# new = the working tree's build; old = daa3c39. One archive back.
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
for v in old; do gunzip -c out-carry/var/fp4gemm_$v.gz > b/fp4gemm_$v; chmod +x b/fp4gemm_$v; done
cp b/fp4gemm b/fp4gemm_new
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call2.tgz -C $r .; }
trap finish EXIT
start=$SECONDS
timeout 200 ./b/fp4gemm_gpu_tests --gtest_brief=1 --gtest_filter='CudaDecodeWgmma.*:CudaDecodeLaunch*:CudaDecodeChained*' > $r/gpu-tests-wgmma.txt 2>&1; echo "rc=$? s=$((SECONDS-start))" >> $r/gpu-tests-wgmma.txt
one() {  # variant label file m shapes [env...]
  local v=$1 label=$2 file=$3 m=$4 shapes=$5; shift 5
  timeout 150 env "$@" ./b/fp4gemm_$v bench --backend cuda_decode --no-peers -m $m --shapes $shapes --json 2>>$r/err.txt \
    | sed "s/^{/{\"variant\":\"$label\",/" >> $r/$file.jsonl
  echo "$label $file $m $shapes s=$((SECONDS-start))" >> $r/progress.txt
}
W=FP4GEMM_DECODE_KERNEL=wgmma
for v in old new old new; do
  one $v $v lone 32,64 8448x1024,8448x16384 $W FP4GEMM_WGMMA_SHAPE=1:1
  one $v $v rule 17,32,33,48,64 12288x4096,4096x12288,28672x8192,8192x8192,16384x4096,14336x4096,6144x4096 X=1
done
# Where wgmma against mma.sync may have moved (the rule's bounds): the shapes just below them.
one new wgmma cross 17,24,32,33,48,64 4096x4096,2048x8192,8192x1024,12288x4096,12288x8192,8192x4096,4096x8192 $W
one new mma cross 17,24,32,33,48,64 4096x4096,2048x8192,8192x1024,12288x4096,12288x8192,8192x4096,4096x8192 FP4GEMM_DECODE_KERNEL=mma
cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
for tool in racecheck memcheck; do
  timeout 150 $cs --tool $tool --error-exitcode 9 ./b/fp4gemm_gpu_tests --gtest_brief=1 --gtest_filter='CudaDecodeWgmma.EveryOutputType*' > $r/$tool.txt 2>&1; echo "rc=$? s=$((SECONDS-start))" >> $r/$tool.txt
done
echo "done s=$((SECONDS-start))" >> $r/progress.txt
