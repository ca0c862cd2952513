"""Loads the extension that registers torch.ops.fp4gemm, and the ops' fake implementations."""
import os

import torch

_ENV = "FP4GEMM_TORCH_LIBRARY"


def _library_path() -> str:
    # The installed wheel has _C.so beside this file; the build tree's tests name theirs in the env.
    path = os.environ.get(_ENV) or os.path.join(os.path.dirname(os.path.abspath(__file__)), "_C.so")
    if not os.path.exists(path):
        raise ImportError(
            f"fp4gemm's torch extension {path} is missing: install the package with "
            f"`pip install --no-build-isolation .` from the repository, or set {_ENV} to a built _C.so")
    return path


torch.ops.load_library(_library_path())
ops = torch.ops.fp4gemm

from . import _fake  # noqa: E402,F401  (registers the fake implementations)
