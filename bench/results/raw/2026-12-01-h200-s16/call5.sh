#!/usr/bin/env bash
# Session 16, call 5 (aebe8bd): (a) the mma.sync kernel with the L1 carveout preference at its
# maximum (carveL1.sed) against the tip, ABAB, M = 1-32; (b) ncu of the tip's mma.sync kernel on
# 12288x4096 at M = 1, 8 and 16 (one isolated launch each): L1 hit rate of the activation loads,
# stall reasons, source view.
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
gunzip -c out-carry/var/fp4gemm_carveL1.gz > b/fp4gemm_carveL1; chmod +x b/fp4gemm_carveL1
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call5.tgz -C $r .; }
trap finish EXIT
start=$SECONDS
S=4096x4096,4096x12288,12288x4096,28672x8192,8192x8192
for rep in 1 2; do
  for cli in fp4gemm fp4gemm_carveL1; do
    timeout 200 env FP4GEMM_DECODE_KERNEL=mma ./b/$cli bench --backend cuda_decode --no-peers -m 1,4,8,9,16,32 --shapes $S --json 2>>$r/err.txt \
      | sed "s/^{/{\"variant\":\"$cli\",/" >> $r/carve.jsonl
    echo "$cli rep $rep s=$((SECONDS-start))" >> $r/progress.txt
  done
done
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
profile() {  # m
  timeout 120 $ncu --clock-control none -k regex:decode_gemm_kernel -c 1 --section SourceCounters --section WarpStateStats --section SpeedOfLight --section MemoryWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables --section Occupancy --section LaunchStats \
    -o $r/ncu-m$1 ./b/fp4gemm bench --backend cuda_decode --no-peers -m $1 -n 12288 -k 4096 > $r/ncu-m$1-run.txt 2>&1
  $ncu -i $r/ncu-m$1.ncu-rep --page source --print-source sass --csv | gzip > $r/ncu-m$1-sass.csv.gz
  $ncu -i $r/ncu-m$1.ncu-rep --page details --print-details all > $r/ncu-m$1-details.txt 2>&1
  rm -f $r/ncu-m$1.ncu-rep
  echo "ncu m$1 s=$((SECONDS-start))" >> $r/progress.txt
}
profile 1
profile 16
profile 8
echo "done s=$((SECONDS-start))" >> $r/progress.txt
