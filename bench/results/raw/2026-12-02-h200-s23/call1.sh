#!/usr/bin/env bash
# Session 23, call 1 (session 22's call10.sh): the build with kMinChunksPerWideWarp = 1 (the 12-way K split from one chunk
# per warp) and the wgmma launch refactor (raise_shared_limit): the whole GPU suite, the changed weights against the old shape
# (1:8 forced) and the issue weights at M = 1 and 4.
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call1.tgz -C $r .; }
trap finish EXIT
start=$SECONDS
timeout 240 ./b/fp4gemm_gpu_tests > $r/gpu-tests.txt 2>&1; echo "tests rc=$? s=$((SECONDS-start))" >> $r/progress.txt
bench() {  # variant env shapes m
  timeout 100 env $2 ./b/fp4gemm bench --backend cuda_decode --no-peers -m $4 --shapes $3 --json 2>>$r/err.txt | sed "s/^{/{\"variant\":\"$1\",/" >> $r/ab.jsonl
}
for rep in 1 2; do
  bench rule X=1 4096x768,4096x1024,4096x1280 1,4,8
  bench old FP4GEMM_DECODE_SHAPE=1:8 4096x768,4096x1024,4096x1280 1,4,8
done
bench rule X=1 4096x4096,4096x12288,12288x4096,28672x8192 1,4
echo "bench s=$((SECONDS-start))" >> $r/progress.txt
