#!/usr/bin/env bash
# Gathers what a GPU machine without this build's Debian libraries needs into one folder: the CLI,
# the GPU test binary (and the host test binary with --host-tests) and the shared libraries they
# load from outside the CUDA toolkit (Highway, OpenBLAS and its Fortran runtime). Run there with
# LD_LIBRARY_PATH=<folder>/lib.
# Usage: scripts/gpu_bundle.sh BUILD_DIR OUT_DIR [--host-tests]   (env MAX_MIB, default 60: the
# lent-GPU tool caps the working tree plus carried folders at 64 MiB, and the repository takes
# ~2 MiB; the script fails when the bundle is larger)
set -euo pipefail
build=${1:?build directory (configured with CUDA, e.g. build)}
out=${2:?output folder}
host_tests=${3:-}
binaries=("$build/fp4gemm" "$build/tests/fp4gemm_gpu_tests")
[ "$host_tests" = "--host-tests" ] && binaries+=("$build/tests/fp4gemm_tests")
for binary in "${binaries[@]}"; do
  [ -x "$binary" ] || { echo "gpu_bundle: $binary is missing; build it first" >&2; exit 1; }
done
mkdir -p "$out/lib"
cp "${binaries[@]}" "$out/"
# The libraries the binaries resolve from the system, except glibc, the C++ runtime and CUDA,
# which a GPU machine has.
ldd "${binaries[@]}" | awk '/=> \// {print $3}' | sort -u |
  grep -E '/lib(hwy|openblas|gfortran|quadmath|lapack|blas)[^/]*$' | while read -r library; do
    cp -L "$library" "$out/lib/"
  done
size_kib=$(du -sk "$out" | cut -f1)
echo "gpu_bundle: $out holds $((size_kib / 1024)) MiB: $(ls "$out" | tr '\n' ' ')and lib/: $(ls "$out/lib" | tr '\n' ' ')"
if [ "$size_kib" -gt $(( ${MAX_MIB:-60} * 1024 )) ]; then
  echo "gpu_bundle: larger than ${MAX_MIB:-60} MiB; leave out --host-tests or set MAX_MIB" >&2
  exit 1
fi
