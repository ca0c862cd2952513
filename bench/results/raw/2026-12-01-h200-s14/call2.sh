#!/usr/bin/env bash
# Session 14, call 2 (build: 2640ea5 = tip; variants of sm90_wgmma_gemm.cu: ring, s12, s16, ring16). One archive back.
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
for v in ring s12 s16 ring16; do gunzip -c out-carry/var/fp4gemm_$v.gz > b/fp4gemm_$v; chmod +x b/fp4gemm_$v; done
cp b/fp4gemm b/fp4gemm_tip
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call2.tgz -C $r .; }
trap finish EXIT
start=$SECONDS
one() {  # variant label file m shapes [env...]
  local v=$1 label=$2 file=$3 m=$4 shapes=$5; shift 5
  timeout 90 env "$@" ./b/fp4gemm_$v bench --backend cuda_decode --no-peers -m $m --shapes $shapes --json 2>>$r/err.txt \
    | sed "s/^{/{\"variant\":\"$label\",/" >> $r/$file.jsonl
  echo "$label $file $m $shapes s=$((SECONDS-start))" >> $r/progress.txt
}
W="FP4GEMM_DECODE_KERNEL=wgmma"
# 4. intercept and slope, lone 1:1 CTAs
ks=8448x1024,8448x2048,8448x4096,8448x8192,8448x16384
for v in tip ring; do one $v $v slope 32,64 $ks $W FP4GEMM_WGMMA_SHAPE=1:1; done
# 5. ring depth at one CTA per SM
deep=8448x4096,8448x16384,4096x12288
for v in tip s12 s16 ring16 ring; do one $v $v stages 32,64 $deep $W FP4GEMM_WGMMA_SHAPE=1:1; done
for v in tip s12 s16; do one $v $v stages 32,64 12288x4096 $W FP4GEMM_WGMMA_SHAPE=2:1; one $v $v-rule stages 32,64 4096x12288,8192x8192 $W; done
for v in tip s16; do one $v $v-rule stages 32,64 12288x4096,28672x8192 $W; done
# 6. wgmma (its rule shape) against mma.sync at M = 33..64, N = 4096..6144
cross=4096x4096,4096x8192,4096x12288,4096x14336,6144x4096
one tip mma crossover 33,48,64 $cross FP4GEMM_DECODE_KERNEL=mma
one tip wgmma crossover 33,48,64 $cross $W
one s16 wgmma-s16 crossover 33,48,64 $cross $W
echo "done s=$((SECONDS-start))" >> $r/progress.txt
