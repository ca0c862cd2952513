#!/bin/bash
# usage: build_variant.sh NAME SED_EXPR   -> /tmp/var/fp4gemm_NAME  (CLI with a modified sm90_wgmma_gemm.cu)
set -e
name=$1; expr=$2
cd /work/main/build-dev
src=/work/main/src/backends/cuda_decode/sm90_wgmma_gemm_$name.cu
if [ -n "${FROM_GIT:-}" ]; then git -C /work/main show HEAD:src/backends/cuda_decode/sm90_wgmma_gemm.cu > $src; else sed "$expr" /work/main/src/backends/cuda_decode/sm90_wgmma_gemm.cu > $src; fi
/usr/local/cuda/bin/nvcc -forward-unknown-to-host-compiler -DFP4GEMM_WITH_CUDA=1 -DHWY_SHARED_DEFINE --options-file CMakeFiles/fp4gemm.dir/includes_CUDA.rsp -O3 -DNDEBUG --generate-code=arch=compute_90a,code=[sm_90a] --generate-code=arch=compute_80,code=[compute_80,sm_80] -Xcompiler=-fPIC --expt-relaxed-constexpr -lineinfo -Xptxas=-warn-spills -std=c++17 -x cu -c $src -o /tmp/var/wgmma_$name.o
rm -f $src
rm -rf /tmp/var/lib_$name && mkdir -p /tmp/var/lib_$name && cp libfp4gemm.a /tmp/var/lib_$name/libfp4gemm.a
cd /tmp/var/lib_$name && cp /tmp/var/wgmma_$name.o sm90_wgmma_gemm.cu.o && ar r libfp4gemm.a sm90_wgmma_gemm.cu.o
cd /work/main/build-dev
sed "s#libfp4gemm.a#/tmp/var/lib_$name/libfp4gemm.a#; s#-o fp4gemm #-o /tmp/var/fp4gemm_$name #" CMakeFiles/fp4gemm_cli.dir/link.txt > /tmp/var/link_$name.sh
bash /tmp/var/link_$name.sh
ls -la /tmp/var/fp4gemm_$name
