#!/usr/bin/env bash
# Session 30, call 6: two activation tiles (M = 9-16) on few-row weights: the rule (unclustered,
# PDL off at these fills) against the same with PDL forced and against 1x8 CTAs in clusters of 2, 4
# and 8 with PDL forced (as the M <= 8 rule runs them), ABAB. Binary: 82a78b3.
# Bundle: scripts/gpu_bundle.sh build-dev out-carry --archive.
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call6.tgz -C $r .; cp $r/sweep-table.md $OUT/ 2>/dev/null; }
trap finish EXIT
start=$SECONDS
w=256x4096,512x4096,768x4096,1024x4096,1536x4096,256x8192,512x8192,1024x8192,512x16384,1024x16384
run() { local tag=$1; shift; env "$@" timeout 60 ./b/fp4gemm bench --backend cuda_decode --no-peers -m 9,12,16 --shapes $w --json 2>>$r/bench.err | sed "s/^{/{\"shape\":\"$tag\",/" >> $r/sweep.jsonl; echo "$tag rc=$? s=$((SECONDS-start))" >> $r/progress.txt; }
for pass in 1 2; do
  run pdl$pass FP4GEMM_PDL=1
  for c in 2 4 8; do run c$c-$pass FP4GEMM_PDL=1 FP4GEMM_DECODE_SHAPE=1:8:1:0:$c; done
  run $([ $pass = 2 ] && echo rule || echo rule1) FP4GEMM_UNUSED=1
done
for nk in "512 4096" "1024 8192"; do set -- $nk
  ./b/fp4gemm explain -m 16 -n $1 -k $2 2>&1 | grep '^kernel:' | sed "s/^/${1}x$2 M=16 /" >> $r/explain.txt; done
python3 scripts/sweep_table.py $r/sweep.jsonl > $r/sweep-table.md 2>&1
cat $r/progress.txt $r/sweep-table.md; cut -c1-300 $r/explain.txt
