#!/usr/bin/env bash
# Session 19, call 5: bulk_copy_rate with the kernel-shaped ring added (two producer warps, eight
# consumer warps releasing every lane or one).
set -u
gunzip -c out-carry/var/bulk_copy_rate.gz > ./bulk_copy_rate; chmod +x ./bulk_copy_rate
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call5.tgz -C $r .; }
trap finish EXIT
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.sm --format=csv > $r/gpu.txt 2>&1
timeout 200 ./bulk_copy_rate > $r/bulk-copy-rate.jsonl 2>&1; echo "rc=$?" >> $r/bulk-copy-rate.jsonl
