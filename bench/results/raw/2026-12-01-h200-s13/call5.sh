#!/usr/bin/env bash
# Session 13, call 5 (build: 347d5cc + wgmma accumulator sets: 3 at 64 tokens, 4 at 16/32 for one-warpgroup CTAs;
# b/fp4gemm_base = the tip's kernel). Full GPU suite; A/B at M = 32, 64; compute-sanitizer memcheck and racecheck on
# the wgmma tests; the table with peers. One archive back ($OUT/call5.tgz).
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
gunzip -c out-carry/var/fp4gemm_base.gz > b/fp4gemm_base; chmod +x b/fp4gemm_base; cp b/fp4gemm b/fp4gemm_acc3
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call5.tgz -C $r .; }
trap finish EXIT
start=$SECONDS
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $r/gpu.txt
timeout 150 ./b/fp4gemm_gpu_tests --gtest_brief=1 > $r/gpu-tests.txt 2>&1; echo "rc=$? s=$((SECONDS-start))" >> $r/gpu-tests.txt
one() {  # variant shape n k
  if [ "$2" = rule ]; then
    ./b/fp4gemm_$1 bench --backend cuda_decode --no-peers -m 32,64 -n $3 -k $4 --json 2>>$r/err.txt
  else
    FP4GEMM_DECODE_KERNEL=wgmma FP4GEMM_WGMMA_SHAPE=$2 ./b/fp4gemm_$1 bench --backend cuda_decode --no-peers -m 32,64 -n $3 -k $4 --json 2>>$r/err.txt
  fi | sed "s/^{/{\"variant\":\"$1\",\"shape\":\"$2\",/" >> $r/ab.jsonl
  echo "$1 $2 $3x$4 s=$((SECONDS-start))" >> $r/progress.txt
}
for v in base acc3; do one $v rule 12288 4096; one $v 1:1 8448 4096; one $v rule 8192 8192; one $v rule 14336 4096; done
one acc3 1:4 4096 12288; one acc3 1:4 4096 4096; one acc3 1:2 12288 4096; one acc3 rule 28672 8192; one acc3 1:1 28672 8192
san=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
for tool in racecheck memcheck; do
  timeout 100 $san --tool $tool ./b/fp4gemm_gpu_tests --gtest_brief=1 \
    --gtest_filter='CudaDecodeWgmma.EveryActivationAndOutputType:CudaDecodeWgmma.OddActivationAndOutputRowStrides' > $r/$tool.txt 2>&1
  echo "rc=$? s=$((SECONDS-start))" >> $r/$tool.txt
done
for pair in "12288 4096" "8192 8192"; do
  set -- $pair
  timeout 40 ./b/fp4gemm bench -m 32,64 -n $1 -k $2 --json >> $r/peers.jsonl 2>>$r/err.txt
  echo "peers $1x$2 s=$((SECONDS-start))" >> $r/progress.txt
done
echo "done s=$((SECONDS-start))" >> $r/progress.txt
