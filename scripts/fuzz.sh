#!/usr/bin/env bash
# Fuzz the safetensors header/tensor-table parser with libFuzzer (clang-14, ASan + UBSan).
# Separate from the CMake build so gcc builds are unaffected.
#
#   scripts/fuzz.sh               fuzz for 10 minutes
#   scripts/fuzz.sh --ci          fuzz for 30 seconds (CI)
#   scripts/fuzz.sh --time SECS   fuzz for SECS seconds
#
# The seeds in tests/fuzz/corpus/ are read, never written; inputs the fuzzer finds go to
# build-fuzz/corpus/, crashes to build-fuzz/artifacts/. Exits non-zero on any crash, sanitizer
# report or broken invariant, after printing the input that caused it.
# Needs: clang-14 and libclang-rt-14-dev (apt-get install clang-14 libclang-rt-14-dev), nlohmann-json3-dev.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
seconds=600
while [ $# -gt 0 ]; do
  case "$1" in
    --ci) seconds=30 ;;
    --time) seconds=${2:?--time needs a number of seconds}; shift ;;
    *) echo "fuzz.sh: unknown argument '$1' (use --ci or --time SECONDS)" >&2; exit 2 ;;
  esac
  shift
done

compiler=${FUZZ_CXX:-clang++-14}
if ! command -v "$compiler" >/dev/null; then
  echo "fuzz.sh: $compiler not found; install clang-14 and libclang-rt-14-dev" >&2
  exit 1
fi
runtime=$("$compiler" -print-file-name="libclang_rt.fuzzer-$(uname -m).a")
if [ ! -f "$runtime" ]; then
  echo "fuzz.sh: $compiler has no libFuzzer runtime; install libclang-rt-14-dev" >&2
  exit 1
fi
build=${FUZZ_BUILD_DIR:-$root/build-fuzz}
mkdir -p "$build/corpus" "$build/artifacts"
binary=$build/safetensors_header_fuzz
"$compiler" -std=c++20 -O1 -g -fno-omit-frame-pointer -fsanitize=fuzzer,address,undefined \
  -fno-sanitize-recover=undefined -I "$root/include" \
  "$root/tests/fuzz/safetensors_header_fuzz.cpp" "$root/src/io/safetensors_header.cpp" "$root/src/io/tensor_dtype.cpp" \
  -o "$binary"

echo "fuzz.sh: fuzzing the safetensors header parser for ${seconds}s (seeds: tests/fuzz/corpus)"
# -max_len: headers of interest are small; 64 KiB leaves room for long tensor tables.
"$binary" "$build/corpus" "$root/tests/fuzz/corpus" \
  -dict="$root/tests/fuzz/safetensors.dict" -max_total_time="$seconds" -max_len=65536 -timeout=10 \
  -rss_limit_mb=2048 -artifact_prefix="$build/artifacts/" -print_final_stats=1
