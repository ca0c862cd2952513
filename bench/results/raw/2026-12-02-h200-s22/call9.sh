#!/usr/bin/env bash
# Session 22, call 9: the M <= 16 launch-shape rule against every compiled CTA shape on weights of
# common models that the rule was not fitted to (scripts/decode_shape_sweep.sh, the tip's CLI).
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call9.tgz -C $r .; }
trap finish EXIT
start=$SECONDS
export MS=1,4,16
export WEIGHTS="1024 4096,2048 4096,4096 1024,4096 2048,3072 4096,6144 4096,4096 6144,4096 14336,14336 4096,10240 8192"
timeout 560 bash scripts/decode_shape_sweep.sh ./b/fp4gemm > $r/sweep.jsonl 2>>$r/err.txt
echo "sweep rc=$? s=$((SECONDS-start))" >> $r/progress.txt
