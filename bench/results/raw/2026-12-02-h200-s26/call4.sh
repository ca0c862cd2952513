#!/usr/bin/env bash
# Session 26, call 4: every compiled mma.sync shape of one and two activation tiles against the
# rule at M = 1 and 16, on the GEMM shapes of published models (scripts/decode_shape_sweep.sh).
# Bundle: scripts/gpu_bundle.sh build-dev out-carry --archive
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call4.tgz -C $r .; }
trap finish EXIT
start=$SECONDS
# Llama 3 8B and 70B (and 70B at TP 8), Qwen3-32B, Qwen2-7B, DeepSeek-V3's experts, small MoE experts.
export WEIGHTS="6144 4096,28672 4096,10240 8192,8192 8192,57344 8192,8192 28672,1280 8192,8192 1024,7168 8192,8192 3584,10240 5120,5120 8192,51200 5120,5120 25600,4608 3584,3584 3584,37888 3584,3584 18944,4096 7168,7168 2048,2048 4096,4096 1024"
MS=1,16 timeout 500 scripts/decode_shape_sweep.sh ./b/fp4gemm > $r/sweep.jsonl 2> $r/sweep.err; echo "sweep rc=$? s=$((SECONDS-start))" >> $r/progress.txt
