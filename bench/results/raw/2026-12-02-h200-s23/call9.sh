#!/usr/bin/env bash
# Session 23, call 9: what binds the prefill kernel's CTAs. Ablations (sed variants of the tip's
# sm90_prefill_gemm.cu, values wrong, timing valid): nodecode (decode warps skip decode and
# stmatrix), nowgmma (consumers skip the HGMMAs), nofence (no proxy fence); then ncu of the tip.
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
for v in nodecode nowgmma nofence; do gunzip -c out-carry/var/fp4gemm_$v.gz > b/fp4gemm_$v; chmod +x b/fp4gemm_$v; done
cp b/fp4gemm b/fp4gemm_tip
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call9.tgz -C $r .; }
trap finish EXIT
start=$SECONDS
for rep in 1 2; do
  for v in tip nodecode nowgmma nofence; do
    timeout 60 ./b/fp4gemm_$v bench --backend cuda_decode --no-peers -m 128,512 --shapes 4096x4096,28672x8192 --json 2>>$r/err.txt \
      | sed "s/^{/{\"variant\":\"$v\",/" >> $r/ab.jsonl
  done
  echo "rep $rep s=$((SECONDS-start))" >> $r/progress.txt
done
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
timeout 120 $ncu --clock-control none -k regex:prefill_gemm_kernel -c 1 --section SourceCounters --section WarpStateStats \
  --section SpeedOfLight --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis --section SchedulerStats \
  -o $r/ncu-4096-m512 ./b/fp4gemm bench --backend cuda_decode --no-peers -m 512 -n 4096 -k 4096 > $r/ncu-run.txt 2>&1
$ncu -i $r/ncu-4096-m512.ncu-rep --page source --print-source sass --csv | gzip > $r/ncu-4096-m512-sass.csv.gz
$ncu -i $r/ncu-4096-m512.ncu-rep --page details --print-details all > $r/ncu-4096-m512-details.txt 2>&1
rm -f $r/ncu-4096-m512.ncu-rep
echo "ncu s=$((SECONDS-start))" >> $r/progress.txt
