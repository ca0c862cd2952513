#!/usr/bin/env bash
# Session 29, call 1: the GPU tests and issue 3's table (gpu_check, no sanitizers: no kernel
# changed), then the kernel rule with tile pairs ahead of wgmma (default) against the same build
# with wgmma forced where the old rule ran it (FP4GEMM_DECODE_KERNEL=wgmma), ABAB, 13 weights,
# M = 17-32.
# Bundle: scripts/gpu_bundle.sh build-dev out-carry --archive.
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call1.tgz -C $r .; cp $r/check/table.md $OUT/ 2>/dev/null; }
trap finish EXIT
start=$SECONDS
nvidia-smi > $r/nvidia-smi.txt 2>&1
SANITIZE=0 timeout 330 scripts/gpu_check.sh b $r/check > $r/check.txt 2>&1; echo "check rc=$? s=$((SECONDS-start))" >> $r/progress.txt
(cd $r/check && tar xzf results.tgz 2>/dev/null)
w=8192x8192,8192x4096,16384x2048,8192x14336,8192x28672,16384x4096,16384x8192,18432x4096,20480x4096,20480x8192,24576x4096,12288x4096,28672x8192
run() { local tag=$1; shift; env "$@" timeout 100 ./b/fp4gemm bench --backend cuda_decode --no-peers -m 17,20,22,24,25,28,32 --shapes $w --json 2>>$r/bench.err | sed "s/^{/{\"shape\":\"$tag\",/" >> $r/sweep.jsonl; echo "$tag rc=$? s=$((SECONDS-start))" >> $r/progress.txt; }
for pass in 1 2; do
  run wgmma$pass FP4GEMM_DECODE_KERNEL=wgmma
  run rule$pass FP4GEMM_UNUSED=1
done
for m in 20 24 32; do for nk in "8192 8192" "16384 4096" "20480 4096"; do set -- $nk
  ./b/fp4gemm explain -m $m -n $1 -k $2 2>&1 | grep '^kernel:' | sed "s/^/${1}x$2 M=$m /" >> $r/explain.txt; done; done
python3 scripts/sweep_table.py $r/sweep.jsonl > $r/sweep-table.md 2>&1
cat $r/progress.txt $r/sweep-table.md
