#!/usr/bin/env bash
# Session 21, call 2: ncu --set full of the wgmma kernel (12288x4096 M = 64, one CTA per SM; and
# 28672x8192 M = 64, two per SM): which per-SM unit is busiest.
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call2.tgz -C $r .; }
trap finish EXIT
start=$SECONDS
ncu=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null || echo ncu)
for s in 12288:4096 28672:8192; do
  n=${s%%:*}; k=${s#*:}
  timeout 200 $ncu --set full --import-source no -k regex:'wgmma_gemm_kernel' -s 2 -c 1 -o $r/full-${n}x${k} \
    ./b/fp4gemm bench --backend cuda_decode --no-peers -m 64 -n $n -k $k > $r/ncu-${n}x${k}.log 2>&1
  timeout 60 $ncu --import $r/full-${n}x${k}.ncu-rep --page details --print-units base > $r/details-${n}x${k}.txt 2>&1
  timeout 60 $ncu --import $r/full-${n}x${k}.ncu-rep --page raw --csv > $r/raw-${n}x${k}.csv 2>&1
  echo "ncu $s s=$((SECONDS-start))" >> $r/progress.txt
done
