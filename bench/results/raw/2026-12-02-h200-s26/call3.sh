#!/usr/bin/env bash
# Session 26, call 3: the build with the paired wide split rule: scripts/gpu_check.sh without the
# sanitizers (call 2 ran them on every compiled shape), then the rule's picks on the off-issue
# 4096-row weights of call 2.
# Bundle: scripts/gpu_bundle.sh build-dev out-carry --archive
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call3.tgz -C $r .; }
trap finish EXIT
start=$SECONDS
SANITIZE=0 timeout 400 scripts/gpu_check.sh b $r/check > $r/gpu-check.txt 2>&1; echo "check rc=$? s=$((SECONDS-start))" >> $r/progress.txt
timeout 90 ./b/fp4gemm bench --backend cuda_decode --no-peers -m 1,8,16 --shapes 4096x8192,4096x14336,4096x16384,4096x28672,3840x8192,4096x2048 --json > $r/rule.jsonl 2>&1; echo "rule rc=$? s=$((SECONDS-start))" >> $r/progress.txt
