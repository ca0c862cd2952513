#!/usr/bin/env bash
# Session 14, call 4 (build: 2640ea5 + wgmma grids of 1x1 clusters launched without the cluster attribute;
# tip = 2640ea5; ring = call 3's ring variant). One archive back.
set -u
mkdir -p b && tar xzf out-carry/bundle.tgz -C b; export LD_LIBRARY_PATH=$PWD/b/lib
for v in tip ring; do gunzip -c out-carry/var/fp4gemm_$v.gz > b/fp4gemm_$v; chmod +x b/fp4gemm_$v; done
cp b/fp4gemm b/fp4gemm_new
r=$PWD/r; mkdir -p $r
finish() { tar czf $OUT/call4.tgz -C $r .; }
trap finish EXIT
start=$SECONDS
timeout 150 ./b/fp4gemm_gpu_tests --gtest_brief=1 --gtest_filter='CudaDecodeWgmma.*:CudaDecodeLaunch*:CudaDecodeChained*' > $r/gpu-tests-wgmma.txt 2>&1; echo "rc=$? s=$((SECONDS-start))" >> $r/gpu-tests-wgmma.txt
one() {  # variant label file m shapes [env...]
  local v=$1 label=$2 file=$3 m=$4 shapes=$5; shift 5
  timeout 150 env "$@" ./b/fp4gemm_$v bench --backend cuda_decode --no-peers -m $m --shapes $shapes --json 2>>$r/err.txt \
    | sed "s/^{/{\"variant\":\"$label\",/" >> $r/$file.jsonl
  echo "$label $file $m $shapes s=$((SECONDS-start))" >> $r/progress.txt
}
cross=2048x8192,2048x16384,3072x8192,4096x4096,4096x6144,5120x4096,4096x8192,6144x4096,8192x1024,8192x2048,8192x4096,16384x1024,16384x2048,14336x4096,12288x4096
ms=17,24,32,33,48,64
one new mma crossover $ms $cross FP4GEMM_DECODE_KERNEL=mma
one new wgmma crossover $ms $cross FP4GEMM_DECODE_KERNEL=wgmma
one tip wgmma-tip crossover $ms $cross FP4GEMM_DECODE_KERNEL=wgmma
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
profile() {  # name variant
  FP4GEMM_DECODE_KERNEL=wgmma FP4GEMM_WGMMA_SHAPE=1:1 timeout 120 $ncu --clock-control none -k regex:wgmma_gemm_kernel -c 1 --section SourceCounters --section WarpStateStats --section SpeedOfLight --section MemoryWorkloadAnalysis \
    -o $r/$1 ./b/fp4gemm_$2 bench --backend cuda_decode --no-peers -m 64 -n 8448 -k 16384 > $r/$1-run.txt 2>&1
  $ncu -i $r/$1.ncu-rep --page source --print-source sass --csv | gzip > $r/$1-sass.csv.gz
  $ncu -i $r/$1.ncu-rep --page details --print-details all > $r/$1-details.txt 2>&1
  rm -f $r/$1.ncu-rep
  echo "ncu $1 s=$((SECONDS-start))" >> $r/progress.txt
}
profile ncu-ring ring
profile ncu-full new
echo "done s=$((SECONDS-start))" >> $r/progress.txt
