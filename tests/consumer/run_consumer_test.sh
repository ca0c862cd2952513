#!/usr/bin/env bash
# Installs the build tree into a scratch prefix, then builds and runs a separate project that
# finds it with find_package(fp4gemm).
set -euo pipefail
build_dir=$1
source_dir=$2
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
cmake --install "$build_dir" --prefix "$scratch/prefix" >/dev/null
cuda_flag=${3:-OFF}
cmake -S "$source_dir" -B "$scratch/build" -DCMAKE_PREFIX_PATH="$scratch/prefix" -DFP4GEMM_CONSUMER_CUDA=$cuda_flag \
  -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$scratch/build" >/dev/null
"$scratch/build/consumer"
