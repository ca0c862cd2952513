#!/usr/bin/env bash
# Runs python_interop_test.py with the PyPI packages `safetensors` and `numpy`: the system python
# when it has them, else a virtual environment made (once) in $1. Exits 77 (ctest: skipped) with
# the reason when neither can be had, e.g. without network access to PyPI.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
venv=${1:-${TMPDIR:-/tmp}/fp4gemm-interop-venv}
: "${FP4GEMM_CLI:?set FP4GEMM_CLI to the fp4gemm binary}"

python=python3
if ! python3 -c "import safetensors, numpy" 2>/dev/null; then
  python=$venv/bin/python
  if ! "$python" -c "import safetensors, numpy" 2>/dev/null; then
    echo "python interop: installing safetensors and numpy from PyPI into $venv"
    if ! { python3 -m venv "$venv" && "$venv/bin/pip" install --quiet --disable-pip-version-check safetensors numpy; }; then
      echo "SKIPPED: could not install the PyPI packages safetensors and numpy (no network or no python3-venv);"
      echo "         install them (pip install safetensors numpy) to run this test"
      exit 77
    fi
  fi
fi
exec "$python" "$here/python_interop_test.py"
