#!/usr/bin/env bash
# Session 30, call 1: the tip 69ab2a9 (never run on a GPU: session 29's review commit) through
# gpu_check with the sanitizers (GPU tests, issue 3's table with peers, PDL off, memcheck,
# racecheck), after a sweep of M = 21 and 23 (never measured): the rule against mma.sync and wgmma
# forced, ABAB, on the 13 weights of session 29's call 1.
# Bundle: scripts/gpu_bundle.sh build-dev out-carry --archive.
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call1.tgz -C $r .; cp $r/check/table.md $OUT/ 2>/dev/null; }
trap finish EXIT
start=$SECONDS
nvidia-smi > $r/nvidia-smi.txt 2>&1
w=8192x8192,8192x4096,16384x2048,8192x14336,8192x28672,16384x4096,16384x8192,18432x4096,20480x4096,20480x8192,24576x4096,12288x4096,28672x8192
run() { local tag=$1; shift; env "$@" timeout 60 ./b/fp4gemm bench --backend cuda_decode --no-peers -m 20,21,23,24 --shapes $w --json 2>>$r/bench.err | sed "s/^{/{\"shape\":\"$tag\",/" >> $r/sweep.jsonl; echo "$tag rc=$? s=$((SECONDS-start))" >> $r/progress.txt; }
for pass in 1 2; do
  run mma$pass FP4GEMM_DECODE_KERNEL=mma
  run wgmma$pass FP4GEMM_DECODE_KERNEL=wgmma
  run $([ $pass = 2 ] && echo rule || echo rule1) FP4GEMM_UNUSED=1
done
for m in 21 23; do for nk in "8192 8192" "16384 4096" "20480 4096" "28672 8192"; do set -- $nk
  ./b/fp4gemm explain -m $m -n $1 -k $2 2>&1 | grep '^kernel:' | sed "s/^/${1}x$2 M=$m /" >> $r/explain.txt; done; done
python3 scripts/sweep_table.py $r/sweep.jsonl > $r/sweep-table.md 2>&1
timeout 450 scripts/gpu_check.sh b $r/check > $r/check.txt 2>&1; echo "check rc=$? s=$((SECONDS-start))" >> $r/progress.txt
(cd $r/check && tar xzf results.tgz 2>/dev/null)
cat $r/progress.txt $r/check.txt $r/sweep-table.md
