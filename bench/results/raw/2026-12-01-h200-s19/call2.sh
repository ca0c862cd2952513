#!/usr/bin/env bash
# Session 19, call 2: "ahead" (the wgmma kernel reading chunk c + 2's codes and scales from shared
# memory at the end of step c, a step before their decode) against base (the tip): the wgmma GPU
# tests, an A/B at M = 17-64, ncu source counters of ahead.
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
gunzip -c out-carry/var/fp4gemm-base.gz > b/fp4gemm-base; chmod +x b/fp4gemm-base
cp b/fp4gemm b/fp4gemm-ahead
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call2.tgz -C $r .; }
trap finish EXIT
start=$SECONDS
timeout 150 ./b/fp4gemm_gpu_tests --gtest_brief=1 --gtest_filter='CudaDecodeWgmma.*' > $r/wgmma-tests.txt 2>&1; echo "rc=$? s=$((SECONDS-start))" >> $r/wgmma-tests.txt
echo "tests s=$((SECONDS-start))" >> $r/progress.txt
bench() {  # variant env shapes m
  timeout 120 env $2 ./b/fp4gemm-$1 bench --backend cuda_decode --no-peers -m $4 --shapes $3 --json 2>>$r/err.txt | sed "s/^{/{\"variant\":\"$1\",/" >> $r/ab.jsonl
}
S=4096x4096,4096x12288,12288x4096,28672x8192,8192x8192,16384x4096
for rep in 1 2; do
  for v in base ahead; do bench $v X=1 $S 17,24,32,48,64; done
  echo "rep $rep s=$((SECONDS-start))" >> $r/progress.txt
done
ncu=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null || echo ncu)
timeout 120 $ncu --clock-control none -k regex:wgmma_gemm_kernel -c 1 --section SourceCounters --section WarpStateStats --section SpeedOfLight \
  --section ComputeWorkloadAnalysis --section Occupancy -o $r/ncu-ahead ./b/fp4gemm-ahead bench --backend cuda_decode --no-peers -m 64 -n 12288 -k 4096 > $r/ncu-ahead-run.txt 2>&1
$ncu -i $r/ncu-ahead.ncu-rep --page source --print-source sass --csv | gzip > $r/ncu-ahead-sass.csv.gz
$ncu -i $r/ncu-ahead.ncu-rep --page details --print-details all > $r/ncu-ahead-details.txt 2>&1
rm -f $r/ncu-ahead.ncu-rep
echo "done s=$((SECONDS-start))" >> $r/progress.txt
