#!/usr/bin/env bash
# Checks that README.md's library example is main.cpp's (the lines between its README-EXAMPLE
# markers), then installs the build tree into a scratch prefix and builds and runs main.cpp as a
# separate project that finds the library with find_package(fp4gemm).
set -euo pipefail
build_dir=$1
source_dir=$2
cuda_flag=${3:-OFF}

readme="$source_dir/../../README.md"
example=$(sed -n '/README-EXAMPLE-BEGIN/,/README-EXAMPLE-END/{//!p}' "$source_dir/main.cpp" | sed 's/^  //')
if [ -z "$example" ]; then
  echo "tests/consumer/main.cpp has no README-EXAMPLE-BEGIN/END block; put the README's library example between them" >&2
  exit 1
fi
if [[ "$(cat "$readme")" != *"$example"* ]]; then
  echo "README.md's library example differs from tests/consumer/main.cpp (the lines between its README-EXAMPLE" >&2
  echo "markers, less two spaces of indent); copy the block from main.cpp into the README. The block is:" >&2
  echo "$example" >&2
  exit 1
fi

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
cmake --install "$build_dir" --prefix "$scratch/prefix" >/dev/null
cmake -S "$source_dir" -B "$scratch/build" -DCMAKE_PREFIX_PATH="$scratch/prefix" -DFP4GEMM_CONSUMER_CUDA=$cuda_flag \
  -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$scratch/build" >/dev/null
"$scratch/build/consumer"
