#!/usr/bin/env bash
# Creates (once) the virtual environment that the Python package is built and tested in: torch from
# PyPI (about 4.5 GB with its CUDA libraries; its CPU ops run without a GPU), numpy, safetensors,
# pytest and the build backend. Later runs find it complete and return at once, so `make test`
# pays for the download only on a fresh machine. Prints the venv's python on success; exits 77
# (ctest: skipped) with the reason when the venv cannot be made (no python3-venv, no PyPI).
#   usage: scripts/python-env.sh [VENV_DIR]     (default: build/venv)
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
venv=${1:-$here/build/venv}
packages=(torch numpy safetensors pytest scikit-build-core)
stamp=$venv/.fp4gemm-complete

if [[ -f $stamp && -x $venv/bin/python ]]; then
  echo "$venv/bin/python"
  exit 0
fi
echo "python env: installing ${packages[*]} from PyPI into $venv (once; torch is about 4.5 GB)" >&2
if ! python3 -m venv "$venv" >&2; then
  echo "SKIPPED: python3 -m venv failed (install python3-venv) so the Python package cannot be tested" >&2
  exit 77
fi
if ! "$venv/bin/pip" install --quiet --disable-pip-version-check "${packages[@]}" >&2; then
  echo "SKIPPED: could not install ${packages[*]} from PyPI into $venv (no network?)" >&2
  exit 77
fi
touch "$stamp"
echo "$venv/bin/python"
