#!/usr/bin/env bash
# Session 26, call 1: the launch-shape GPU test with the new 1:16:2 and 1:24:2 shapes; those
# shapes forced against the rule on 4096-row weights at M = 1/4/8; the issue rows with peers and
# the stream floor; variant `tl` (tl.patch: %globaltimer milestones of every 16th CTA of the
# mma.sync kernel) on four shapes at M = 1.
# Bundle: scripts/gpu_bundle.sh build-dev out-carry --archive; out-carry/var/fp4gemm_tl.gz
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
gunzip -c out-carry/var/fp4gemm_tl.gz > b/fp4gemm_tl; chmod +x b/fp4gemm_tl
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call1.tgz -C $r .; }
trap finish EXIT
start=$SECONDS
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $r/gpu.txt 2>&1
timeout 150 ./b/fp4gemm_gpu_tests --gtest_filter='CudaDecodeLaunchShapes.*' > $r/launch-shapes-test.txt 2>&1; echo "shapes-test rc=$? s=$((SECONDS-start))" >> $r/progress.txt
for shape in rule 1:24:2 1:16:2; do
  e=""; [ $shape != rule ] && e="FP4GEMM_DECODE_SHAPE=$shape"
  env $e timeout 60 ./b/fp4gemm bench --backend cuda_decode --no-peers -m 1,4,8 --shapes 4096x12288,4096x8192,4096x14336,4096x4096 --json | sed "s/^/$shape /" >> $r/forced.jsonl 2>> $r/forced.err
  echo "forced $shape rc=$? s=$((SECONDS-start))" >> $r/progress.txt
done
timeout 120 ./b/fp4gemm bench --backend cuda_decode -m 1 --shapes 4096x12288,12288x4096,4096x4096,28672x8192 --json > $r/peers.jsonl 2> $r/peers.err; echo "peers rc=$? s=$((SECONDS-start))" >> $r/progress.txt
for c in "rule 4096x12288" "1:24:2 4096x12288" "rule 12288x4096" "rule 4096x4096" "rule 28672x8192"; do
  set -- $c; e=""; [ $1 != rule ] && e="FP4GEMM_DECODE_SHAPE=$1"
  env $e timeout 60 ./b/fp4gemm_tl bench --backend cuda_decode --no-peers -m 1 --shapes $2 --json > $r/tl.txt 2>&1
  echo "tl $c rc=$? s=$((SECONDS-start))" >> $r/progress.txt
  grep '^S26' $r/tl.txt | gzip > $r/tl-$1-$2.txt.gz; grep -v '^S26' $r/tl.txt > $r/tl-$1-$2.bench; rm $r/tl.txt
done
