#!/usr/bin/env bash
# Session 19, call 1: three CLIs of the wgmma kernel side by side: base (the tip, 1a32287), epi (the
# epilogue as one rolled store loop for both the split and unsplit paths) and v4 (epi plus the next
# chunk's shared-memory reads moved ahead of the wgmma wait; 147 registers). The GPU tests of v4,
# an A/B/C at M = 17-64, an epilogue probe at K = 128, and ncu source counters of epi and v4.
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
for v in base epi; do gunzip -c out-carry/var/fp4gemm-$v.gz > b/fp4gemm-$v; chmod +x b/fp4gemm-$v; done
cp b/fp4gemm b/fp4gemm-v4
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call1.tgz -C $r .; }
trap finish EXIT
start=$SECONDS
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.sm,driver_version --format=csv > $r/gpu.txt 2>&1
timeout 150 ./b/fp4gemm_gpu_tests --gtest_brief=1 --gtest_filter='CudaDecodeWgmma.*' > $r/wgmma-tests.txt 2>&1; echo "rc=$? s=$((SECONDS-start))" >> $r/wgmma-tests.txt
echo "tests s=$((SECONDS-start))" >> $r/progress.txt
bench() {  # variant env shapes m
  timeout 120 env $2 ./b/fp4gemm-$1 bench --backend cuda_decode --no-peers -m $4 --shapes $3 --json 2>>$r/err.txt | sed "s/^{/{\"variant\":\"$1\",/" >> $r/ab.jsonl
}
S=4096x4096,4096x12288,12288x4096,28672x8192,8192x8192
for rep in 1 2; do
  for v in base epi v4; do
    bench $v X=1 $S 17,24,32,48,64
    bench $v FP4GEMM_DECODE_KERNEL=wgmma 4096x128,12288x128,28672x128 32,64
  done
  echo "rep $rep s=$((SECONDS-start))" >> $r/progress.txt
done
ncu=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null || echo ncu)
profile() {  # variant n k
  timeout 120 $ncu --clock-control none -k regex:wgmma_gemm_kernel -c 1 --section SourceCounters --section WarpStateStats --section SpeedOfLight \
    --section ComputeWorkloadAnalysis --section Occupancy --section LaunchStats \
    -o $r/ncu-$1-$2x$3 ./b/fp4gemm-$1 bench --backend cuda_decode --no-peers -m 64 -n $2 -k $3 > $r/ncu-$1-$2x$3-run.txt 2>&1
  $ncu -i $r/ncu-$1-$2x$3.ncu-rep --page source --print-source sass --csv | gzip > $r/ncu-$1-$2x$3-sass.csv.gz
  $ncu -i $r/ncu-$1-$2x$3.ncu-rep --page details --print-details all > $r/ncu-$1-$2x$3-details.txt 2>&1
  rm -f $r/ncu-$1-$2x$3.ncu-rep
  echo "ncu $1 $2x$3 s=$((SECONDS-start))" >> $r/progress.txt
}
profile epi 12288 4096
profile v4 12288 4096
echo "done s=$((SECONDS-start))" >> $r/progress.txt
