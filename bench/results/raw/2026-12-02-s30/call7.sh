#!/usr/bin/env bash
# Session 30, call 7: the rule with two activation tiles clustered too (M = 9-16): the backend and
# launch-shape GPU tests, then the rule on call 6's weights, M = 1, 9, 16 (compare with call 6's
# forced shapes, same binary kernels).
# Bundle: scripts/gpu_bundle.sh build-dev out-carry --archive.
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call7.tgz -C $r .; cp $r/sweep-table.md $OUT/ 2>/dev/null; }
trap finish EXIT
start=$SECONDS
timeout 120 ./b/fp4gemm_gpu_tests --gtest_brief=1 --gtest_filter='All/CudaBackend.*:CudaDecodeLaunchShapes.*:CudaDecodeChained*' > $r/gpu-tests.txt 2>&1; echo "gpu tests rc=$? s=$((SECONDS-start))" >> $r/progress.txt
w=256x4096,512x4096,768x4096,1024x4096,1536x4096,256x8192,512x8192,1024x8192,512x16384,1024x16384
timeout 60 ./b/fp4gemm bench --backend cuda_decode --no-peers -m 1,9,16 --shapes $w --json 2>>$r/bench.err | sed 's/^{/{"shape":"rule",/' > $r/sweep.jsonl
echo "rule rc=$? s=$((SECONDS-start))" >> $r/progress.txt
python3 scripts/sweep_table.py $r/sweep.jsonl > $r/sweep-table.md 2>&1
cat $r/progress.txt; grep -E '^\[  (PASSED|FAILED|SKIPPED) |Failure' $r/gpu-tests.txt | head; cat $r/sweep-table.md
