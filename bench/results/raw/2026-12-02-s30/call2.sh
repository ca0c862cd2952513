#!/usr/bin/env bash
# Session 30, call 2: the build of 4e3facc (the wgmma kernel's grid rules moved to wgmma_tuning.hpp,
# no rule changes) through gpu_check without the sanitizers (GPU tests, issue 3's table), then
# expert-sized weights (MoE experts' gate/up and down projections at 512-2048 rows or columns) with
# peers, M = 1-16: what one call of such a weight costs against its roofline.
# Bundle: scripts/gpu_bundle.sh build-dev out-carry --archive.
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call2.tgz -C $r .; cp $r/check/table.md $OUT/ 2>/dev/null; }
trap finish EXIT
start=$SECONDS
SANITIZE=0 timeout 330 scripts/gpu_check.sh b $r/check > $r/check.txt 2>&1; echo "check rc=$? s=$((SECONDS-start))" >> $r/progress.txt
(cd $r/check && tar xzf results.tgz 2>/dev/null && rm -f results.tgz)
timeout 150 ./b/fp4gemm bench -m 1,4,8,16 --shapes 512x4096,1024x4096,2048x4096,4096x512,4096x1024,4096x2048 --json > $r/experts.jsonl 2> $r/experts.err
echo "experts rc=$? s=$((SECONDS-start))" >> $r/progress.txt
python3 scripts/bench_table.py $r/experts.jsonl > $r/experts-table.md 2>&1
cat $r/progress.txt $r/check.txt $r/experts-table.md
