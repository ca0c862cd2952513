#!/usr/bin/env bash
# Session 27, call 5: three- and four-tile mma.sync kernels that ask L2 for their weights 6 chunks
# beyond the register ring (prefetch.global.L2) against the build before (b/fp4gemm_base: the same
# kernels without it), M = 17-32, mma.sync forced at the rule's shape and the rule itself; the
# launch-shape and chained-call GPU tests; memcheck on the chained test.
# Bundle: scripts/gpu_bundle.sh build-dev out-carry --archive, plus fp4gemm_base.gz.
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
gunzip -c out-carry/fp4gemm_base.gz > b/fp4gemm_base; chmod +x b/fp4gemm_base
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call5.tgz -C $r .; }
trap finish EXIT
start=$SECONDS
timeout 120 ./b/fp4gemm_gpu_tests --gtest_filter='CudaDecodeLaunchShapes.*:CudaDecodeChained*:*CudaBackend.*' > $r/gpu-tests.txt 2>&1; echo "tests rc=$? s=$((SECONDS-start))" >> $r/progress.txt
w=4096x4096,12288x4096,4096x12288,28672x8192,6144x4096,8192x8192,16384x4096,4608x3584,3584x18944
run() { local tag=$1 bin=$2; shift 2; env "$@" timeout 100 ./b/$bin bench --backend cuda_decode --no-peers -m 17,24,25,32 --shapes $w --json 2>>$r/bench.err | sed "s/^{/{\"shape\":\"$tag\",/" >> $r/sweep.jsonl; echo "$tag rc=$? s=$((SECONDS-start))" >> $r/progress.txt; }
run base-mma fp4gemm_base FP4GEMM_DECODE_KERNEL=mma
run pf-mma fp4gemm FP4GEMM_DECODE_KERNEL=mma
run base-rule fp4gemm_base FP4GEMM_UNUSED=1
run pf-rule fp4gemm FP4GEMM_UNUSED=1
run base-mma2 fp4gemm_base FP4GEMM_DECODE_KERNEL=mma
run pf-mma2 fp4gemm FP4GEMM_DECODE_KERNEL=mma
timeout 90 compute-sanitizer --tool memcheck ./b/fp4gemm_gpu_tests --gtest_filter='CudaDecodeChained*' > $r/memcheck.txt 2>&1; echo "memcheck rc=$? s=$((SECONDS-start))" >> $r/progress.txt
