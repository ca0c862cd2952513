#!/usr/bin/env bash
# Session 25, call 6: the final build on the device (the whole GPU suite, the host binary's
# GpuRunner/Canary tests after the canary's simulated-device change, doctor, memcheck and racecheck
# on the K-split test), then variant `tl` of the prefill kernel: %globaltimer milestones of CTA
# (0,0,0) kept in registers and printed once at the end of each role (patch: tl.patch).
# Bundle: scripts/gpu_bundle.sh build-dev out-carry --host-tests --archive; out-carry/var/fp4gemm_tl.gz
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
gunzip -c out-carry/var/fp4gemm_tl.gz > b/fp4gemm_tl; chmod +x b/fp4gemm_tl
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call6.tgz -C $r .; }
trap finish EXIT
start=$SECONDS
timeout 200 ./b/fp4gemm_gpu_tests --gtest_brief=1 > $r/gpu-tests.txt 2>&1; echo "suite rc=$? s=$((SECONDS-start))" >> $r/progress.txt
timeout 100 ./b/fp4gemm_tests --gtest_filter='GpuRunner.*:Canary*' > $r/host-gpu-tests.txt 2>&1; echo "host rc=$? s=$((SECONDS-start))" >> $r/progress.txt
timeout 60 ./b/fp4gemm doctor > $r/doctor.txt 2>&1; echo "doctor rc=$? s=$((SECONDS-start))" >> $r/progress.txt
timeout 100 compute-sanitizer --tool memcheck ./b/fp4gemm_gpu_tests --gtest_filter='CudaDecodeWgmma.PrefillKernelSplitsKAnyWay' > $r/memcheck.txt 2>&1; echo "memcheck rc=$? s=$((SECONDS-start))" >> $r/progress.txt
timeout 100 compute-sanitizer --tool racecheck ./b/fp4gemm_gpu_tests --gtest_filter='CudaDecodeWgmma.PrefillKernelSplitsKAnyWay' > $r/racecheck.txt 2>&1; echo "racecheck rc=$? s=$((SECONDS-start))" >> $r/progress.txt
for c in "1 4096x4096" "4 4096x4096" "1 4096x12288" "1 28672x8192"; do
  set -- $c
  FP4GEMM_PREFILL_SPLITS=$1 timeout 40 ./b/fp4gemm_tl bench --backend cuda_decode --no-peers -m 128 --shapes $2 > $r/tl.txt 2>&1
  echo "tl $c rc=$? s=$((SECONDS-start))" >> $r/progress.txt
  grep S25 $r/tl.txt | tail -24 > $r/tl-$1-$2.tail; grep -v S25 $r/tl.txt > $r/tl-$1-$2.bench; rm $r/tl.txt
done
