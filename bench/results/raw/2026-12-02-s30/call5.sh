#!/usr/bin/env bash
# Session 30, call 5: the committed rule (clusters for few-row weights at M <= 8, with PDL at any
# fill): gpu_check without the sanitizers (GPU tests, issue 3's table), then the rule against the
# unclustered 1x8 grid it replaces, on call 4's weights, M = 1, 4, 8, 16.
# Bundle: scripts/gpu_bundle.sh build-dev out-carry --archive.
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call5.tgz -C $r .; cp $r/sweep-table.md $OUT/ 2>/dev/null; }
trap finish EXIT
start=$SECONDS
SANITIZE=0 timeout 300 scripts/gpu_check.sh b $r/check > $r/check.txt 2>&1; echo "check rc=$? s=$((SECONDS-start))" >> $r/progress.txt
(cd $r/check && tar xzf results.tgz 2>/dev/null && rm -f results.tgz)
w=256x4096,512x4096,1024x4096,512x8192,1024x8192,1024x2048,1536x4096,256x8192,768x4096,768x8192,512x16384,1024x16384
run() { local tag=$1; shift; env "$@" timeout 60 ./b/fp4gemm bench --backend cuda_decode --no-peers -m 1,4,8,16 --shapes $w --json 2>>$r/bench.err | sed "s/^{/{\"shape\":\"$tag\",/" >> $r/sweep.jsonl; echo "$tag rc=$? s=$((SECONDS-start))" >> $r/progress.txt; }
run 1:8 FP4GEMM_DECODE_SHAPE=1:8
run rule FP4GEMM_UNUSED=1
timeout 60 ./b/fp4gemm bench -m 1,8 --shapes 512x4096,1024x4096,512x8192 --json > $r/peers.jsonl 2>> $r/bench.err
python3 scripts/bench_table.py $r/peers.jsonl > $r/peers-table.md 2>&1
python3 scripts/sweep_table.py $r/sweep.jsonl > $r/sweep-table.md 2>&1
cat $r/progress.txt $r/check.txt $r/sweep-table.md $r/peers-table.md
