#!/bin/bash
# usage: build_inflight.sh NAME INFLIGHT STAGES -> /tmp/var/fp4gemm_NAME (wgmma kernel object rebuilt)
set -e
name=$1; inflight=$2; stages=$3
b=/work/main/build-dev
rm -rf /tmp/var/lib_$name && mkdir -p /tmp/var/lib_$name && cp $b/libfp4gemm.a /tmp/var/lib_$name/libfp4gemm.a
hdr=/work/main/src/backends/cuda_decode/decode_tuning.hpp
cp $hdr /tmp/var/hdr.bak
trap 'cp /tmp/var/hdr.bak '$hdr EXIT
sed -i "s/inline constexpr int kWgmmaGroupsInFlight = 1;/inline constexpr int kWgmmaGroupsInFlight = $inflight;/; s/inline constexpr int kWgmmaStages = 8;/inline constexpr int kWgmmaStages = $stages;/" $hdr
grep -n "kWgmmaGroupsInFlight = \|kWgmmaStages = " $hdr
cd $b
obj=/tmp/var/lib_$name/sm90_wgmma_gemm.cu.o
/usr/local/cuda/bin/nvcc -forward-unknown-to-host-compiler -DFP4GEMM_WITH_CUDA=1 -DHWY_SHARED_DEFINE --options-file CMakeFiles/fp4gemm.dir/includes_CUDA.rsp -O3 -DNDEBUG --generate-code=arch=compute_90a,code=[sm_90a] --generate-code=arch=compute_80,code=[compute_80,sm_80] -Xcompiler=-fPIC --expt-relaxed-constexpr -lineinfo -Xptxas=-warn-spills -Xptxas=-v -std=c++17 -x cu -c /work/main/src/backends/cuda_decode/sm90_wgmma_gemm.cu -o $obj 2>&1 | grep -E "Used|spill" | grep -v "0 bytes spill" | sed 's/ptxas info *: //' 
(cd /tmp/var/lib_$name && ar r libfp4gemm.a sm90_wgmma_gemm.cu.o && ar t libfp4gemm.a | grep wgmma_gemm)
sed "s#libfp4gemm.a#/tmp/var/lib_$name/libfp4gemm.a#; s#-o fp4gemm #-o /tmp/var/fp4gemm_$name #" CMakeFiles/fp4gemm_cli.dir/link.txt > /tmp/var/link_$name.sh
bash /tmp/var/link_$name.sh
ls -la /tmp/var/fp4gemm_$name
