#!/usr/bin/env bash
# Session 25, call 5: where a prefill CTA's fixed ~40 chunk-times go. Variant `ts` of
# sm90_prefill_gemm.cu (printf of %globaltimer at milestones of CTA (0,0,0): init done, the
# grid-dependency wait, record 0 landed, chunk 0 decoded, chunk 0 ready for the consumers, main
# loop end, epilogue end), run by the bench (graph replay; the last lines are steady-state calls).
# Bundle: scripts/gpu_bundle.sh build-dev out-carry --archive; out-carry/var/fp4gemm_ts.gz
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
gunzip -c out-carry/var/fp4gemm_ts.gz > b/fp4gemm_ts; chmod +x b/fp4gemm_ts
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call5.tgz -C $r .; }
trap finish EXIT
start=$SECONDS
for c in "4 4096x4096" "1 4096x4096" "1 28672x8192" "4 4096x12288"; do
  set -- $c
  FP4GEMM_PREFILL_SPLITS=$1 timeout 60 ./b/fp4gemm_ts bench --backend cuda_decode --no-peers -m 128 --shapes $2 > $r/ts-$1-$2.txt 2>&1
  echo "$c rc=$? s=$((SECONDS-start))" >> $r/progress.txt
  grep S25 $r/ts-$1-$2.txt | tail -60 > $r/ts-$1-$2.tail; grep -v S25 $r/ts-$1-$2.txt > $r/ts-$1-$2.bench; rm $r/ts-$1-$2.txt
done
