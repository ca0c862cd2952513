#!/usr/bin/env bash
# Runs the Python suite (tests/python) with the venv's python against the extension built in the
# CMake build tree. Exits 77 (ctest: skipped) with the reason when there is no venv, and so no
# extension: scripts/python-env.sh could not make it (no python3-venv, or PyPI unreachable);
# fails instead under CI, which must run it.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
if [[ -z ${FP4GEMM_PYTHON:-} || -z ${FP4GEMM_TORCH_LIBRARY:-} ]]; then
  echo "SKIPPED: the Python package was not built: \`make test\` builds it when scripts/python-env.sh can make"
  echo "         build/venv (torch from PyPI); run that script to see why it could not"
  # CI (CI=true) has PyPI: there a missing venv is a broken setup, not a reason to skip.
  [[ ${CI:-} == true ]] && { echo "FAIL: CI must run the Python suite"; exit 1; }
  exit 77
fi
export PYTHONPATH=$root/python${PYTHONPATH:+:$PYTHONPATH}
exec "$FP4GEMM_PYTHON" -m pytest -q -rs -p no:cacheprovider -p no:logging "$here" "$@"
