#!/usr/bin/env bash
# The user-facing install, `pip install --no-build-isolation .`, into a scratch folder with the
# venv's pip and torch, then an import and one gemm from there. The CUDA backends are left out
# (FP4GEMM_CUDA=OFF) to bound the time on a 2-core CI machine: the main build tree compiles them.
# scikit-build-core keeps its build folder (build/pip), so later runs are incremental.
# Exits 77 (ctest: skipped) when there is no venv (see run_pytest.sh).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
if [[ -z ${FP4GEMM_PYTHON:-} ]]; then
  echo "SKIPPED: no venv with torch (scripts/python-env.sh could not make build/venv), so nothing to install into"
  exit 77
fi
target=$(mktemp -d)
trap 'rm -rf "$target"' EXIT
cd "$root" || exit 1
# Two jobs, as the rest of the suite: ninja would otherwise start one more per core than there are.
if ! CMAKE_BUILD_PARALLEL_LEVEL=2 FP4GEMM_CUDA=OFF "$FP4GEMM_PYTHON" -m pip install --quiet --no-build-isolation --no-deps --target "$target" .; then
  echo "FAIL: pip install --no-build-isolation . failed"
  exit 1
fi
cd "$target" || exit 1
PYTHONPATH=$target "$FP4GEMM_PYTHON" - <<'PY'
import os
import torch
import fp4gemm, fp4gemm.torch
assert fp4gemm.__file__.startswith(os.environ["PYTHONPATH"]), f"imported {fp4gemm.__file__}, not the installed package"
layer = fp4gemm.torch.Linear.from_linear(torch.nn.Linear(64, 32, bias=False))
out = layer(torch.randn(2, 64))
assert out.shape == (2, 32) and not torch.isnan(out).any()
assert "ref" in [backend["name"] for backend in fp4gemm.info()["compiled_backends"]]
print("pip install --no-build-isolation .: the installed package imports and runs a gemm")
PY
