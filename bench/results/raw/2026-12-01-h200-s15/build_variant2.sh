#!/bin/bash
# usage: build_variant2.sh NAME FILE SEDFILE [FILE SEDFILE ...] -> /tmp/var/fp4gemm_NAME
# FILE is relative to src/ (e.g. backends/cuda_decode/sm90_wgmma_gemm.cu); each is compiled with
# build-dev's flags after `sed -f SEDFILE` and replaces its object in a copy of libfp4gemm.a.
set -e
name=$1; shift
b=/work/main/build-dev
rm -rf /tmp/var/lib_$name && mkdir -p /tmp/var/lib_$name && cp $b/libfp4gemm.a /tmp/var/lib_$name/libfp4gemm.a
while [ $# -gt 0 ]; do
  file=$1; script=$2; shift 2
  base=$(basename $file); ext=${base##*.}
  src=/work/main/src/$(dirname $file)/variant_${name}_$base
  sed -f $script /work/main/src/$file > $src
  obj=/tmp/var/lib_$name/$base.o
  cd $b
  if [ $ext = cu ]; then
    /usr/local/cuda/bin/nvcc -forward-unknown-to-host-compiler -DFP4GEMM_WITH_CUDA=1 -DHWY_SHARED_DEFINE --options-file CMakeFiles/fp4gemm.dir/includes_CUDA.rsp -O3 -DNDEBUG --generate-code=arch=compute_90a,code=[sm_90a] --generate-code=arch=compute_80,code=[compute_80,sm_80] -Xcompiler=-fPIC --expt-relaxed-constexpr -lineinfo -Xptxas=-warn-spills -std=c++17 -x cu -c $src -o $obj || { rm -f $src; exit 1; }
  else
    /usr/bin/c++ -DFP4GEMM_WITH_CUDA=1 -DHWY_SHARED_DEFINE -I/work/main/include -I/work/main/src -isystem /usr/local/cuda/include -O3 -DNDEBUG -fPIC -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers -fopenmp -std=c++20 -c $src -o $obj || { rm -f $src; exit 1; }
  fi
  rm -f $src
  (cd /tmp/var/lib_$name && ar r libfp4gemm.a $base.o)
done
cd $b
sed "s#libfp4gemm.a#/tmp/var/lib_$name/libfp4gemm.a#; s#-o fp4gemm #-o /tmp/var/fp4gemm_$name #" CMakeFiles/fp4gemm_cli.dir/link.txt > /tmp/var/link_$name.sh
bash /tmp/var/link_$name.sh
ls -la /tmp/var/fp4gemm_$name
