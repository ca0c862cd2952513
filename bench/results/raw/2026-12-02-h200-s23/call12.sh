#!/usr/bin/env bash
# Session 23, call 12 (prepared, not run: the device budget was spent). The prefill kernel with
# three fragment buffers (activation loads two chunks ahead) and setmaxnreg (decode warpgroups 96,
# consumers 160): three-buffers-setmaxnreg.patch on the session's last commit, built as the variant `tb` (CLI and GPU
# tests linked to the tip's library with the patched sm90_prefill_gemm.cu). Bundle:
#   scripts/gpu_bundle.sh build-dev out-carry --archive; out-carry/var/{fp4gemm_tb,gpu_tests_tb}.gz
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
for v in fp4gemm_tb gpu_tests_tb; do gunzip -c out-carry/var/$v.gz > b/$v; chmod +x b/$v; done
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call12.tgz -C $r .; }
trap finish EXIT
start=$SECONDS
timeout 40 ./b/gpu_tests_tb --gtest_filter='CudaDecodeWgmma.Prefill*' > $r/prefill-tests.txt 2>&1; echo "tests rc=$? s=$((SECONDS-start))" >> $r/progress.txt
if grep -q "PASSED.*2 tests" $r/prefill-tests.txt; then
  timeout 60 compute-sanitizer --tool memcheck ./b/gpu_tests_tb --gtest_filter='CudaDecodeWgmma.PrefillKernelTakesEveryTypeAndStride' > $r/memcheck.txt 2>&1; echo "memcheck rc=$? s=$((SECONDS-start))" >> $r/progress.txt
  timeout 60 compute-sanitizer --tool racecheck ./b/gpu_tests_tb --gtest_filter='CudaDecodeWgmma.PrefillKernelTakesEveryTypeAndStride' > $r/racecheck.txt 2>&1; echo "racecheck rc=$? s=$((SECONDS-start))" >> $r/progress.txt
  for v in fp4gemm fp4gemm_tb; do
    timeout 100 ./b/$v bench --backend cuda_decode -m 65,128,512,4096 --shapes 4096x4096,12288x4096,28672x8192 --json 2>>$r/err.txt \
      | sed "s/^{/{\"variant\":\"$v\",/" >> $r/ab.jsonl
  done
  echo "bench s=$((SECONDS-start))" >> $r/progress.txt
fi
