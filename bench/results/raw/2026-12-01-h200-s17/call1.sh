#!/usr/bin/env bash
# Session 17, call 1 (ab45574): (a) wgmma_rate microbenchmark; (b) session 16's next1 (three tiles
# vs wgmma at M = 17-24 on tall weights); (c) 2:2 vs the rule's 2:1 on 10240/12288 x 8192;
# (d) ncu of the rule's wgmma kernel on full M = 64 grids.
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call1.tgz -C $r .; }
trap finish EXIT
start=$SECONDS
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.sm,driver_version --format=csv > $r/gpu.txt 2>&1
timeout 60 ./out-carry/var/wgmma_rate > $r/wgmma-rate.jsonl 2>&1; echo "rate rc=$? s=$((SECONDS-start))" >> $r/progress.txt
S=14336x2048,14336x4096,14336x8192,16384x2048,16384x4096,20480x4096,28672x8192,8192x8192,8192x16384
for rep in 1 2; do
  for kernel in mma wgmma; do
    timeout 200 env FP4GEMM_DECODE_KERNEL=$kernel ./b/fp4gemm bench --backend cuda_decode --no-peers -m 17,20,24 --shapes $S --json 2>>$r/err.txt \
      | sed "s/^{/{\"variant\":\"$kernel\",/" >> $r/tall.jsonl
  done
done
echo "tall s=$((SECONDS-start))" >> $r/progress.txt
for rep in 1 2; do
  for shape in rule 2:2 4:1; do
    if [ $shape = rule ]; then env=""; else env="FP4GEMM_WGMMA_SHAPE=$shape"; fi
    timeout 100 env $env ./b/fp4gemm bench --backend cuda_decode --no-peers -m 33,48,64 --shapes 10240x8192,12288x8192,8192x8192 --json 2>>$r/err.txt \
      | sed "s/^{/{\"variant\":\"$shape\",/" >> $r/split.jsonl
  done
done
echo "split s=$((SECONDS-start))" >> $r/progress.txt
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
profile() {  # n k
  timeout 120 $ncu --clock-control none -k regex:wgmma_gemm_kernel -c 1 --section SourceCounters --section WarpStateStats --section SpeedOfLight \
    --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables --section InstructionStats --section Occupancy --section LaunchStats \
    -o $r/ncu-$1x$2 ./b/fp4gemm bench --backend cuda_decode --no-peers -m 64 -n $1 -k $2 > $r/ncu-$1x$2-run.txt 2>&1
  $ncu -i $r/ncu-$1x$2.ncu-rep --page source --print-source sass --csv | gzip > $r/ncu-$1x$2-sass.csv.gz
  $ncu -i $r/ncu-$1x$2.ncu-rep --page details --print-details all > $r/ncu-$1x$2-details.txt 2>&1
  $ncu -i $r/ncu-$1x$2.ncu-rep --page raw --csv 2>/dev/null | gzip > $r/ncu-$1x$2-raw.csv.gz
  rm -f $r/ncu-$1x$2.ncu-rep
  echo "ncu $1x$2 s=$((SECONDS-start))" >> $r/progress.txt
}
profile 12288 4096
profile 28672 8192
echo "done s=$((SECONDS-start))" >> $r/progress.txt
