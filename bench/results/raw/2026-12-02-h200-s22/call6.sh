#!/usr/bin/env bash
# Session 22, call 6: wgmma_pipe_mix (built here with the nvcc line in its header comment; carried
# as out-carry/wgmma_pipe_mix): the ping-pong rows and the lock-step rows, then call 5's table again.
set -u
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call6.tgz -C $r .; }
trap finish EXIT
timeout 120 ./out-carry/wgmma_pipe_mix all > $r/pipe-mix.jsonl 2>&1; echo "rc=$?" >> $r/progress.txt
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv >> $r/progress.txt 2>&1
