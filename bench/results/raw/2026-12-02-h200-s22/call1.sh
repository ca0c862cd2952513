#!/usr/bin/env bash
# Session 22, call 1: where the mma.sync kernel's time goes at M = 1-64, by ablation (values wrong,
# timing valid): `noact` (activation loads wrap inside one 512-column window, so they hit L1 and
# no activation bytes cross L2 -> SM after the first rounds) and `nodecode` (fragments are the raw
# code words: no decode, no scale multiply; the scale lookups kept). mma.sync forced at every M.
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call1.tgz -C $r .; }
trap finish EXIT
start=$SECONDS
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $r/gpu.txt 2>&1
bench() {  # variant binary shapes m
  timeout 150 env FP4GEMM_DECODE_KERNEL=mma ./b/$2 bench --backend cuda_decode --no-peers -m $4 --shapes $3 --json 2>>$r/err.txt | sed "s/^{/{\"variant\":\"$1\",/" >> $r/ab.jsonl
}
S=4096x4096,4096x12288,12288x4096,28672x8192,16384x4096
for rep in 1 2; do
  bench tip fp4gemm $S 1,8,16,24,32,64
  bench noact fp4gemm_noact $S 1,8,16,24,32,64
  bench nodecode fp4gemm_nodecode $S 1,8,16,24,32,64
  echo "rep $rep s=$((SECONDS-start))" >> $r/progress.txt
done
