#!/usr/bin/env bash
# Session 22, call 4: wgmma_alu_overlap with the decode fenced behind a branch (first table), then
# call 3's unfenced table again in the same run (the argument `all`).
set -u
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call4.tgz -C $r .; }
trap finish EXIT
timeout 120 ./out-carry/wgmma_alu_overlap all > $r/alu-overlap.jsonl 2>&1; echo "rc=$?" >> $r/progress.txt
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv >> $r/progress.txt 2>&1
