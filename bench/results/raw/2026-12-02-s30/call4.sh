#!/usr/bin/env bash
# Session 30, call 4: the clustered rule (few-row weights at M <= 8): the GPU tests, then ABAB the
# rule against the unclustered 1x8 grid it replaces (FP4GEMM_DECODE_SHAPE=1:8) and the rule with
# PDL forced (its clustered grids fill under 90% of the resident slots, so PDL is off), on call 3's
# weights and five unmeasured ones, M = 1, 4, 8, 16.
# Bundle: scripts/gpu_bundle.sh build-dev out-carry --archive.
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call4.tgz -C $r .; cp $r/sweep-table.md $OUT/ 2>/dev/null; }
trap finish EXIT
start=$SECONDS
timeout 200 ./b/fp4gemm_gpu_tests --gtest_brief=1 > $r/gpu-tests.txt 2>&1; echo "gpu tests rc=$? s=$((SECONDS-start))" >> $r/progress.txt
w=256x4096,512x4096,1024x4096,512x8192,1024x8192,1024x2048,1536x4096,256x8192,768x4096,768x8192,512x16384,1024x16384
run() { local tag=$1; shift; env "$@" timeout 60 ./b/fp4gemm bench --backend cuda_decode --no-peers -m 1,4,8,16 --shapes $w --json 2>>$r/bench.err | sed "s/^{/{\"shape\":\"$tag\",/" >> $r/sweep.jsonl; echo "$tag rc=$? s=$((SECONDS-start))" >> $r/progress.txt; }
for pass in 1 2; do
  run 1:8-$pass FP4GEMM_DECODE_SHAPE=1:8
  run pdl-$pass FP4GEMM_PDL=1
  run $([ $pass = 2 ] && echo rule || echo rule1) FP4GEMM_UNUSED=1
done
for nk in "512 8192" "1024 4096" "1536 4096"; do set -- $nk
  ./b/fp4gemm explain -m 1 -n $1 -k $2 2>&1 | grep '^kernel:' | sed "s/^/${1}x$2 M=1 /" >> $r/explain.txt; done
python3 scripts/sweep_table.py $r/sweep.jsonl > $r/sweep-table.md 2>&1
cat $r/progress.txt; grep -E '^\[  (PASSED|FAILED|SKIPPED) |Failure' $r/gpu-tests.txt | head; cat $r/sweep-table.md
