#!/usr/bin/env bash
# Session 22, call 7: (a) wgmma_pipe_mix (built here with the nvcc line in its header comment;
# carried as out-carry/wgmma_pipe_mix), no argument: the wide-wgmma rows (N = 64, 128, 256);
# (b) the kernel's floor with the weight in L2: `fp4gemm_l2hot` is the tip's CLI with one weight
# copy instead of a rotation past 2x L2 (l2hot.sed), so weights of up to ~40 MB stay in L2 (its
# stream_floor row then reads from L2 as well); the tip's rule rows beside it.
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call7.tgz -C $r .; }
trap finish EXIT
start=$SECONDS
timeout 120 ./out-carry/wgmma_pipe_mix > $r/pipe-mix-wide.jsonl 2>&1; echo "mix rc=$? s=$((SECONDS-start))" >> $r/progress.txt
S=4096x4096,4096x12288,12288x4096,8192x4096
for rep in 1 2; do
  timeout 150 ./b/fp4gemm bench --backend cuda_decode --no-peers -m 1,4,16,32,64 --shapes $S --json 2>>$r/err.txt | sed 's/^{/{"variant":"tip",/' >> $r/l2.jsonl
  timeout 200 ./b/fp4gemm_l2hot bench -m 1,4,16,32,64 --shapes $S --json 2>>$r/err.txt | sed 's/^{/{"variant":"l2hot",/' >> $r/l2.jsonl
  echo "rep $rep s=$((SECONDS-start))" >> $r/progress.txt
done
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv >> $r/progress.txt 2>&1
