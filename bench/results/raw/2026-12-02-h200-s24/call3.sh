#!/usr/bin/env bash
# Session 24, call 3: what binds the prefill kernel once the fragment loads hit L1. Variants (values
# wrong, timing valid): same (every chunk loads chunk 0's fragments) and both (same, and the decode
# warps skip the decode and stmatrix); bench against the tip; ncu of same at 4096² M = 512.
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
for v in same both; do gunzip -c out-carry/var/fp4gemm_$v.gz > b/fp4gemm_$v; chmod +x b/fp4gemm_$v; done
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call3.tgz -C $r .; }
trap finish EXIT
start=$SECONDS
for v in fp4gemm fp4gemm_same fp4gemm_both; do
  timeout 60 ./b/$v bench --backend cuda_decode --no-peers -m 128,512 --shapes 4096x4096,28672x8192 --json 2>>$r/err.txt \
    | sed "s/^{/{\"variant\":\"$v\",/" >> $r/ab.jsonl
  timeout 60 ./b/$v bench --backend cuda_decode --no-peers -m 512 --shapes 12288x4096 --json 2>>$r/err.txt \
    | sed "s/^{/{\"variant\":\"$v\",/" >> $r/ab.jsonl
  echo "bench $v s=$((SECONDS-start))" >> $r/progress.txt
done
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
for v in same both; do
  timeout 120 $ncu --clock-control none -k regex:prefill_gemm_kernel -c 1 --section SourceCounters --section WarpStateStats \
    --section SpeedOfLight --section ComputeWorkloadAnalysis --section SchedulerStats --section MemoryWorkloadAnalysis \
    -o $r/ncu-$v ./b/fp4gemm_$v bench --backend cuda_decode --no-peers -m 512 -n 4096 -k 4096 > $r/ncu-run-$v.txt 2>&1
  $ncu -i $r/ncu-$v.ncu-rep --page source --print-source sass --csv | gzip > $r/ncu-$v-sass.csv.gz
  $ncu -i $r/ncu-$v.ncu-rep --page details --print-details all > $r/ncu-$v-details.txt 2>&1
  rm -f $r/ncu-$v.ncu-rep
  echo "ncu $v s=$((SECONDS-start))" >> $r/progress.txt
done
