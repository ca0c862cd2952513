#!/usr/bin/env bash
# Session 28, call 4: the tile-pair rule for three and four activation tiles (kMinManyTilePairWarpsPerSm)
# against the tip's rule (b/fp4gemm_base: 745ce19's cuda_decode), M = 17-32, ten weights, ABAB; the
# launch-shape GPU test plain and under memcheck and racecheck; then scripts/gpu_check.sh without
# the sanitizers (issue 3's table).
# Bundle: scripts/gpu_bundle.sh build-dev out-carry --archive; fp4gemm_base.gz beside it.
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
gunzip -c out-carry/fp4gemm_base.gz > b/fp4gemm_base; chmod +x b/fp4gemm_base
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call4.tgz -C $r .; }
trap finish EXIT
start=$SECONDS
timeout 120 ./b/fp4gemm_gpu_tests --gtest_filter='CudaDecodeLaunchShapes.*' > $r/launch-shapes-test.txt 2>&1; echo "shapes-test rc=$? s=$((SECONDS-start))" >> $r/progress.txt
w=4096x4096,12288x4096,4096x12288,28672x8192,6144x4096,8192x8192,16384x4096,4608x3584,10240x8192,14336x4096
run() { local tag=$1 bin=$2; shift 2; env "$@" timeout 100 ./b/$bin bench --backend cuda_decode --no-peers -m 17,18,20,22,24,25,28,32 --shapes $w --json 2>>$r/bench.err | sed "s/^{/{\"shape\":\"$tag\",/" >> $r/sweep.jsonl; echo "$tag rc=$? s=$((SECONDS-start))" >> $r/progress.txt; }
for pass in 1 2; do
  run base$pass fp4gemm_base
  run pairs$pass fp4gemm
done
timeout 100 ./b/fp4gemm explain -m 24 -n 12288 -k 4096 > $r/explain-24x12288x4096.txt 2>&1
timeout 100 ./b/fp4gemm explain -m 32 -n 4096 -k 12288 > $r/explain-32x4096x12288.txt 2>&1
sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
timeout 150 $sanitizer --tool memcheck ./b/fp4gemm_gpu_tests --gtest_filter='CudaDecodeLaunchShapes.EveryCompiled*' > $r/memcheck.txt 2>&1; echo "memcheck rc=$? s=$((SECONDS-start))" >> $r/progress.txt
timeout 100 $sanitizer --tool racecheck ./b/fp4gemm_gpu_tests --gtest_filter='CudaDecodeLaunchShapes.EveryCompiled*' > $r/racecheck.txt 2>&1; echo "racecheck rc=$? s=$((SECONDS-start))" >> $r/progress.txt
SANITIZE=0 timeout 220 scripts/gpu_check.sh b $r/check > $r/gpu-check.txt 2>&1; echo "check rc=$? s=$((SECONDS-start))" >> $r/progress.txt
