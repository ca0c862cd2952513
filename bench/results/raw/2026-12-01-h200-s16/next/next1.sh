#!/usr/bin/env bash
# Prepared in session 16, not run (the device time was spent): the three-tile mma.sync kernel against
# wgmma at M = 17-24 on the tall weights where the rule still picks wgmma (N >= 14336, K >= 2048),
# and on 8192 rows for reference. If mma.sync wins on all of them, drop the tall clause of
# choose_decode_kernel (kWgmmaTall*) and let M = 17-24 run mma.sync everywhere.
# Run from the repository root after: scripts/gpu_bundle.sh build out-carry --archive; cp this out-carry/call.sh
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/next1.tgz -C $r .; }
trap finish EXIT
S=14336x2048,14336x4096,14336x8192,16384x2048,16384x4096,20480x4096,28672x8192,8192x8192,8192x16384
for rep in 1 2; do
  for kernel in mma wgmma; do
    timeout 200 env FP4GEMM_DECODE_KERNEL=$kernel ./b/fp4gemm bench --backend cuda_decode --no-peers -m 17,20,24 --shapes $S --json 2>>$r/err.txt \
      | sed "s/^{/{\"variant\":\"$kernel\",/" >> $r/tall.jsonl
  done
done
