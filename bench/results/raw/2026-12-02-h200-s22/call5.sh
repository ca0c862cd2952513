#!/usr/bin/env bash
# Session 22, call 5: the wgmma_pipe_mix microbenchmark (built here with the nvcc line in its header
# comment; carried as out-carry/wgmma_pipe_mix).
set -u
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call5.tgz -C $r .; }
trap finish EXIT
timeout 120 ./out-carry/wgmma_pipe_mix > $r/pipe-mix.jsonl 2>&1; echo "rc=$?" >> $r/progress.txt
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv >> $r/progress.txt 2>&1
