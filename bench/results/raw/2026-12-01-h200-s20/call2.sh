#!/usr/bin/env bash
# Session 20, call 2: where the stream-K grid's ~5 us per call goes. Stream-K grids whose CTAs each
# own whole row blocks (no fixup, one segment: 16384x4096 over 128 and 64 CTAs, 12288x4096 over 96
# and 48) beside the data-parallel grid and 132 CTAs; PDL off for both; then ncu kernel durations.
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call2.tgz -C $r .; }
trap finish EXIT
start=$SECONDS
bench() {  # variant env shapes m
  timeout 60 env $2 ./b/fp4gemm bench --backend cuda_decode --no-peers -m $4 --shapes $3 --json 2>>$r/err.txt | sed "s/^{/{\"variant\":\"$1\",/" >> $r/ab.jsonl
}
W=FP4GEMM_DECODE_KERNEL=wgmma
for rep in 1 2; do
  bench wg $W 16384x4096,12288x4096,4096x4096 64
  for c in 132 128 64 96 48 32; do bench s$c "$W FP4GEMM_WGMMA_STREAM=$c" 16384x4096,12288x4096,4096x4096 64; done
  bench wg-nopdl "$W FP4GEMM_PDL=0" 16384x4096,12288x4096 64
  bench s132-nopdl "$W FP4GEMM_PDL=0 FP4GEMM_WGMMA_STREAM=132" 16384x4096,12288x4096 64
  echo "rep $rep s=$((SECONDS-start))" >> $r/progress.txt
done
ncu=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null || echo ncu)
for v in "wg:X=1" "s132:FP4GEMM_WGMMA_STREAM=132" "s128:FP4GEMM_WGMMA_STREAM=128"; do
  name=${v%%:*}; envs=${v#*:}
  timeout 90 env $W $envs $ncu --clock-control none -k regex:'wgmma_gemm_kernel|pack_activations' -c 6 --section SpeedOfLight --section LaunchStats --section Occupancy \
    ./b/fp4gemm bench --backend cuda_decode --no-peers -m 64 -n 16384 -k 4096 > $r/ncu-$name.txt 2>&1
  echo "ncu $name s=$((SECONDS-start))" >> $r/progress.txt
done
echo "done s=$((SECONDS-start))" >> $r/progress.txt
