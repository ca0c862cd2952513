#!/usr/bin/env bash
# Session 15, call 1 (prepared in session 14; noact and ring2 added): where the wgmma kernel's ~7 us per call goes (lone 1:1 CTAs on
# 8448 x K: intercept = time at K = 1024 minus 16 chunks at the K = 16384 slope) and whether cutting
# it pays on the rule's shapes. Variants (sed scripts beside this file, applied with
# ../build_variant2.sh NAME backends/cuda_decode/sm90_wgmma_gemm.cu next/NAME.sed, nopack with
# backends/cuda_decode/cuda_decode_backend_cuda.cpp), gzipped into out-carry/var/:
#   nostore     - the epilogue's output stores skipped (values wrong; timing only)
#   nosync      - no cluster-wide syncs when the cluster is one CTA (a candidate change: keep if faster)
#   earlylaunch - griddepcontrol.launch_dependents at the start, as the mma.sync kernel does
#   nopack      - the activation pack kernel left out (values wrong; session 14 call 3: -1.1 us)
# and the tip again with FP4GEMM_PDL=0. Predictions go into the results file before the call.
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
vs="nostore nosync earlylaunch nopack noact ring2"
for v in $vs; do gunzip -c out-carry/var/fp4gemm_$v.gz > b/fp4gemm_$v; chmod +x b/fp4gemm_$v; done
cp b/fp4gemm b/fp4gemm_tip
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/intercept.tgz -C $r .; }
trap finish EXIT
start=$SECONDS
one() {  # variant label file m shapes [env...]
  local v=$1 label=$2 file=$3 m=$4 shapes=$5; shift 5
  timeout 150 env "$@" ./b/fp4gemm_$v bench --backend cuda_decode --no-peers -m $m --shapes $shapes --json 2>>$r/err.txt \
    | sed "s/^{/{\"variant\":\"$label\",/" >> $r/$file.jsonl
  echo "$label $file $m $shapes s=$((SECONDS-start))" >> $r/progress.txt
}
W=FP4GEMM_DECODE_KERNEL=wgmma
for v in tip $vs tip; do
  one $v $v lone 32,64 8448x1024,8448x16384 $W FP4GEMM_WGMMA_SHAPE=1:1
  one $v $v rule 33,64 12288x4096,4096x12288,28672x8192,8192x8192 X=1
done
one tip tip-pdl0 lone 32,64 8448x1024,8448x16384 $W FP4GEMM_WGMMA_SHAPE=1:1 FP4GEMM_PDL=0
one tip tip-pdl0 rule 33,64 12288x4096,4096x12288,28672x8192,8192x8192 FP4GEMM_PDL=0
# nosync is the one a kept change could come from: its correctness then needs the wgmma GPU tests.
# Added in session 15: activation multicast (pairs of row blocks share each activation copy) with
# the two-producer kernel, against the rule's shapes (session 6 measured it 2-5x slower with one producer).
one tip mc2 rule 64 12288x4096,28672x8192 $W FP4GEMM_WGMMA_SHAPE=2:1:2
one tip mc2-64 rule 64 4096x12288 $W FP4GEMM_WGMMA_SHAPE=1:1:2
one tip mc1 rule 64 12288x4096,28672x8192 $W FP4GEMM_WGMMA_SHAPE=2:1:1
one tip mc1-64 rule 64 4096x12288 $W FP4GEMM_WGMMA_SHAPE=1:1:1
echo "done2 s=$((SECONDS-start))" >> $r/progress.txt
