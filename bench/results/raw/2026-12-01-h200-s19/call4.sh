#!/usr/bin/env bash
# Session 19, call 4: bulk_copy_rate (rewritten after call 3: clock64-timed consumers, rings side by side,
# spin or try_wait): what sets the time a ring takes to turn over a stage.
set -u
gunzip -c out-carry/var/bulk_copy_rate.gz > ./bulk_copy_rate; chmod +x ./bulk_copy_rate
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call4.tgz -C $r .; }
trap finish EXIT
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.sm --format=csv > $r/gpu.txt 2>&1
timeout 200 ./bulk_copy_rate > $r/bulk-copy-rate.jsonl 2>&1; echo "rc=$?" >> $r/bulk-copy-rate.jsonl
