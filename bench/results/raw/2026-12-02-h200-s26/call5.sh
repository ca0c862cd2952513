#!/usr/bin/env bash
# Session 26, call 5: the rule after call 4 (16-way tile pairs from 0.84 of the SMs and 3 chunks a
# warp; two activation tiles split pairs at least 4 ways): the GPU suite, then the rule on the rows
# it changes and on some it leaves alone.
# Bundle: scripts/gpu_bundle.sh build-dev out-carry --archive
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call5.tgz -C $r .; }
trap finish EXIT
start=$SECONDS
timeout 200 ./b/fp4gemm_gpu_tests --gtest_brief=1 > $r/gpu-tests.txt 2>&1; echo "suite rc=$? s=$((SECONDS-start))" >> $r/progress.txt
timeout 90 ./b/fp4gemm bench --backend cuda_decode --no-peers -m 1,4,8,16 --shapes 3584x3584,3584x4096,3584x8192,3584x18944,4096x3072 --json > $r/changed.jsonl 2>&1; echo "changed rc=$? s=$((SECONDS-start))" >> $r/progress.txt
timeout 90 ./b/fp4gemm bench --backend cuda_decode --no-peers -m 9,16 --shapes 28672x4096,37888x3584 --json > $r/tall.jsonl 2>&1; echo "tall rc=$? s=$((SECONDS-start))" >> $r/progress.txt
timeout 90 ./b/fp4gemm bench --backend cuda_decode --no-peers -m 1,16 --shapes 4096x4096,12288x4096,28672x8192 --json > $r/unchanged.jsonl 2>&1; echo "unchanged rc=$? s=$((SECONDS-start))" >> $r/progress.txt
