#!/usr/bin/env bash
# Gathers what a GPU machine without this build's Debian libraries needs: the CLI, the GPU test
# binary (and the host test binary with --host-tests) and the shared libraries they load from
# outside the CUDA toolkit (Highway, OpenBLAS and its Fortran runtime). Run there with
# LD_LIBRARY_PATH=<folder>/lib.
# Usage: scripts/gpu_bundle.sh BUILD_DIR OUT_DIR [--host-tests] [--python] [--archive]
#   --python: also the static library (libfp4gemm.a), from which scripts/gpu_python_check.sh builds
#             the torch extension against the GPU machine's own torch (~8 MiB more in the archive).
#   --archive: OUT_DIR holds one bundle.tgz instead (unpack there with
#              `mkdir -p b && tar xzf OUT_DIR/bundle.tgz -C b`). It is about a third of the
#              folder's size (55 MiB -> 17 MiB), so the host tests or a second CLI fit too.
# The lent-GPU tool caps the working tree plus carried folders at 64 MiB, and the repository takes
# ~2 MiB; the script fails when what it leaves in OUT_DIR is over MAX_MIB (default 60).
set -euo pipefail
build=${1:?build directory (configured with CUDA, e.g. build)}
out=${2:?output folder}
shift 2
host_tests=0 archive=0 python=0
for option in "$@"; do
  case "$option" in
    --host-tests) host_tests=1 ;;
    --archive) archive=1 ;;
    --python) python=1 ;;
    *) echo "gpu_bundle: unknown option '$option' (--host-tests, --python, --archive)" >&2; exit 2 ;;
  esac
done
binaries=("$build/fp4gemm" "$build/tests/fp4gemm_gpu_tests")
[ "$host_tests" = 1 ] && binaries+=("$build/tests/fp4gemm_tests")
for binary in "${binaries[@]}"; do
  [ -x "$binary" ] || { echo "gpu_bundle: $binary is missing; build it first" >&2; exit 1; }
done
folder=$out
if [ "$archive" = 1 ]; then
  folder=$(mktemp -d)
  trap 'rm -rf "$folder"' EXIT
fi
mkdir -p "$folder/lib"
cp "${binaries[@]}" "$folder/"
if [ "$python" = 1 ]; then
  [ -f "$build/libfp4gemm.a" ] || { echo "gpu_bundle: $build/libfp4gemm.a is missing; build it first" >&2; exit 1; }
  cp "$build/libfp4gemm.a" "$folder/"
fi
# The libraries the binaries resolve from the system, except glibc, the C++ runtime and CUDA,
# which a GPU machine has.
ldd "${binaries[@]}" | awk '/=> \// {print $3}' | sort -u |
  grep -E '/lib(hwy|openblas|gfortran|quadmath|lapack|blas)[^/]*$' | while read -r library; do
    cp -L "$library" "$folder/lib/"
  done
contents="$(ls "$folder" | tr '\n' ' ')and lib/: $(ls "$folder/lib" | tr '\n' ' ')"
if [ "$archive" = 1 ]; then
  mkdir -p "$out"
  tar czf "$out/bundle.tgz" -C "$folder" .
  size_kib=$(du -sk "$out/bundle.tgz" | cut -f1)
  echo "gpu_bundle: $out/bundle.tgz is $((size_kib / 1024)) MiB: $contents"
else
  size_kib=$(du -sk "$out" | cut -f1)
  echo "gpu_bundle: $out holds $((size_kib / 1024)) MiB: $contents"
fi
if [ "$size_kib" -gt $(( ${MAX_MIB:-60} * 1024 )) ]; then
  echo "gpu_bundle: larger than ${MAX_MIB:-60} MiB; use --archive, leave out --host-tests or set MAX_MIB" >&2
  exit 1
fi
