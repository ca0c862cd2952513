#!/usr/bin/env bash
# The Python package's GPU tests and its host cost on a GPU machine whose torch is not this
# machine's: the torch extension (python/csrc) is compiled there against that torch and Python and
# linked with the library built here, then tests/python/test_cuda.py runs on it (CUDA tensors, a
# non-default stream, CUDA-graph capture and replay, torch.compile, and the Python path's cost at
# M = 1 over the library call, printed). pip is not needed and nothing is installed.
# Usage, from the repository root on the GPU machine:
#   scripts/gpu_python_check.sh BIN_DIR OUT_DIR   (BIN_DIR: an unpacked
#                                                  `scripts/gpu_bundle.sh BUILD OUT --python --archive`)
# Env: PYTHON (default /opt/torch/.venv/bin/python, else python3), T_PYTEST (default 300 s).
# Writes OUT_DIR/python-ext-build.txt and OUT_DIR/pytest-cuda.txt; exits non-zero when either fails.
set -uo pipefail
bin=$(cd "${1:?folder with fp4gemm, libfp4gemm.a and lib/}" && pwd)
out=${2:?output folder}
mkdir -p "$out" && out=$(cd "$out" && pwd)
[ -f "$bin/libfp4gemm.a" ] || { echo "gpu_python_check: $bin/libfp4gemm.a is missing (bundle with --python)" >&2; exit 1; }
python=${PYTHON:-/opt/torch/.venv/bin/python}
[ -x "$python" ] || python=python3
read -r torch_dir python_include < <("$python" -c \
  "import os, sysconfig, torch; print(os.path.dirname(torch.__file__), sysconfig.get_paths()['include'])") ||
  { echo "gpu_python_check: $python has no torch" >&2; exit 1; }
export LD_LIBRARY_PATH="$bin/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The flags of the CMake target fp4gemm_torch (python/CMakeLists.txt) that matter for the ABI.
flags=(-O2 -fPIC -fopenmp -std=c++20 -DFP4GEMM_WITH_CUDA=1 -Isrc -Itools -Itools/fp4gemm -Iinclude
       -isystem "$torch_dir/include" -isystem "$torch_dir/include/torch/csrc/api/include"
       -isystem /usr/local/cuda/include -isystem "$python_include")
start=$SECONDS
status=0
for source in python/csrc/*.cpp tools/fp4gemm/reports.cpp tools/fp4gemm/type_options.cpp; do
  g++ "${flags[@]}" -c "$source" -o "$work/$(basename "$source" .cpp).o" &
done
wait || status=1
g++ -shared -o "$work/_C.so" "$work"/*.o "$bin/libfp4gemm.a" -L"$torch_dir/lib" -lc10 -ltorch_cpu -ltorch -ltorch_python \
  -lc10_cuda -ltorch_cuda -L/usr/local/cuda/lib64 -lcudart -lcublas -lcublasLt "$bin"/lib/libhwy.so.* "$bin"/lib/libopenblas.so.* \
  -lgomp -lpthread -ldl -lrt -Wl,-rpath,"$torch_dir/lib" > "$out/python-ext-build.txt" 2>&1 || status=1
echo "gpu_python_check: extension built in $((SECONDS - start)) s (status $status)"
[ "$status" = 0 ] || exit 1
FP4GEMM_CLI="$bin/fp4gemm" FP4GEMM_TORCH_LIBRARY="$work/_C.so" PYTHONPATH="$PWD/python" \
  timeout "${T_PYTEST:-300}" "$python" -m pytest -s -q tests/python/test_cuda.py > "$out/pytest-cuda.txt" 2>&1
rc=$?
grep -E "passed|failed|skipped|error|python path|direct bindings|C\+\+ runner|torch's own" "$out/pytest-cuda.txt" | tail -12
exit $rc
