#!/usr/bin/env bash
# Session 27, call 8: the four-tile mma.sync kernel on packed activations (this build) against
# a2d4744's kernels (b/fp4gemm_base), mma.sync and wgmma forced and the rule, M = 25 and 32; the GPU
# tests of the mma.sync kernels and memcheck on the chained test; issue 3's M = 32 rows with peers.
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
gunzip -c out-carry/fp4gemm_base.gz > b/fp4gemm_base; chmod +x b/fp4gemm_base
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call8.tgz -C $r .; }
trap finish EXIT
start=$SECONDS
timeout 130 ./b/fp4gemm_gpu_tests --gtest_filter='CudaDecodeLaunchShapes.*:CudaDecodeChained*:*CudaBackend.*' > $r/gpu-tests.txt 2>&1; echo "tests rc=$? s=$((SECONDS-start))" >> $r/progress.txt
w=4096x4096,12288x4096,4096x12288,28672x8192,6144x4096,8192x8192,16384x4096,4608x3584,3584x18944
run() { local tag=$1 bin=$2; shift 2; env "$@" timeout 100 ./b/$bin bench --backend cuda_decode --no-peers -m 25,32 --shapes $w --json 2>>$r/bench.err | sed "s/^{/{\"shape\":\"$tag\",/" >> $r/sweep.jsonl; echo "$tag rc=$? s=$((SECONDS-start))" >> $r/progress.txt; }
run base-mma fp4gemm_base FP4GEMM_DECODE_KERNEL=mma
run packed-mma fp4gemm FP4GEMM_DECODE_KERNEL=mma
run packed-wgmma fp4gemm FP4GEMM_DECODE_KERNEL=wgmma
run packed-rule fp4gemm FP4GEMM_UNUSED=1
run base-mma2 fp4gemm_base FP4GEMM_DECODE_KERNEL=mma
run packed-mma2 fp4gemm FP4GEMM_DECODE_KERNEL=mma
FP4GEMM_DECODE_KERNEL=mma timeout 90 ./b/fp4gemm bench --backend cuda_decode -m 32 --shapes 4096x4096,12288x4096,4096x12288,28672x8192 > $r/peers-m32.txt 2>&1; echo "peers rc=$? s=$((SECONDS-start))" >> $r/progress.txt
timeout 90 compute-sanitizer --tool memcheck ./b/fp4gemm_gpu_tests --gtest_filter='CudaDecodeChained*' > $r/memcheck.txt 2>&1; echo "memcheck rc=$? s=$((SECONDS-start))" >> $r/progress.txt
