#!/usr/bin/env bash
# Session 22, call 3: the wgmma_alu_overlap microbenchmark (built here with the nvcc line in its
# header comment; carried as out-carry/wgmma_alu_overlap).
set -u
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call3.tgz -C $r .; }
trap finish EXIT
timeout 120 ./out-carry/wgmma_alu_overlap > $r/alu-overlap.jsonl 2>&1; echo "rc=$?" >> $r/progress.txt
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv >> $r/progress.txt 2>&1
