#!/usr/bin/env bash
# Session 24, call 8: the staged prefill epilogue (the build) against the committed kernel (prev):
# prefill tests, memcheck, racecheck, bench; fp4gemm gemm through the Runner on the GPU (auto,
# --backend cuda_decode, and ref on the CPU) on a 1024x1024 layer, outputs brought back.
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
gunzip -c out-carry/var/fp4gemm_prev.gz > b/fp4gemm_prev; chmod +x b/fp4gemm_prev
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call8.tgz -C $r .; }
trap finish EXIT
start=$SECONDS
timeout 60 ./b/fp4gemm_gpu_tests --gtest_filter='CudaDecodeWgmma.Prefill*' > $r/prefill-tests.txt 2>&1; echo "tests rc=$? s=$((SECONDS-start))" >> $r/progress.txt
if grep -q "PASSED.*2 tests" $r/prefill-tests.txt; then
  timeout 60 compute-sanitizer --tool memcheck ./b/fp4gemm_gpu_tests --gtest_filter='CudaDecodeWgmma.PrefillKernelTakesEveryTypeAndStride' > $r/memcheck.txt 2>&1; echo "memcheck rc=$? s=$((SECONDS-start))" >> $r/progress.txt
  timeout 60 compute-sanitizer --tool racecheck ./b/fp4gemm_gpu_tests --gtest_filter='CudaDecodeWgmma.PrefillKernelTakesEveryTypeAndStride' > $r/racecheck.txt 2>&1; echo "racecheck rc=$? s=$((SECONDS-start))" >> $r/progress.txt
  for v in fp4gemm fp4gemm_prev; do
    peers=--no-peers; [ $v = fp4gemm ] && peers=
    timeout 100 ./b/$v bench --backend cuda_decode $peers -m 65,128,512,4096 --shapes 4096x4096,12288x4096,28672x8192 --json 2>>$r/err.txt \
      | sed "s/^{/{\"variant\":\"$v\",/" >> $r/ab.jsonl
    echo "bench $v s=$((SECONDS-start))" >> $r/progress.txt
  done
fi
g=out-carry/gd; layer=model.layers.0.mlp.down_proj
for m in 3 100; do
  for run in "auto auto" "cuda_decode auto" "ref cpu"; do
    set -- $run
    timeout 60 ./b/fp4gemm gemm --checkpoint $g/ckpt.safetensors --layer $layer --input $g/x$m.safetensors \
      --output $r/y$m-$1.safetensors --output-dtype f32 --backend $1 --device $2 --explain > $r/gemm-$m-$1.txt 2>&1
    echo "gemm m=$m $1 rc=$? s=$((SECONDS-start))" >> $r/progress.txt
  done
done
