"""Loads the extension that registers torch.ops.fp4gemm, and the ops' fake implementations; the same
_C.so is also the module of their direct eager bindings (`direct`: gemm, gemm_out, moe)."""
import importlib.util
import os
import sys
import warnings

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


def _import_module(path: str):
    # From the path, not by name: the build tree's _C.so is not inside the package folder.
    spec = importlib.util.spec_from_file_location(f"{__package__}._C", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    sys.modules[spec.name] = module
    return module


def _direct_module(path: str):
    # The ops need only the library's C++ side; the module also needs the Python it was built for. A
    # _C.so built for another Python version still serves every op, so the modules then call the ops.
    try:
        return _import_module(path)
    except ImportError as error:
        warnings.warn(f"fp4gemm: the direct eager bindings are off, the ops serve every call ({error})", stacklevel=3)
        return None


_path = _library_path()
torch.ops.load_library(_path)
ops = torch.ops.fp4gemm
direct = _direct_module(_path)  # the same functions as ops.gemm, ops.gemm_out, ops.moe, without the dispatcher


def use_direct(x: torch.Tensor) -> bool:
    """Whether a forward on `x` may call `direct` instead of the op: in eager mode, on a plain tensor
    that does not require grad, with no dispatch mode and no torch.jit.trace active. torch.compile
    and export must see the op (it has a fake implementation; is_compiling() comes first so that
    they never read the rest), and tensor subclasses (FakeTensor, FunctionalTensor), dispatch modes
    (make_fx, FlopCounterMode), the JIT tracer and autograd all work inside the dispatcher that
    `direct` goes around: a traced `direct` call would be missing from the trace, and autograd would
    not warn that the op has no backward. The checks cost the host about 0.4 us."""
    return (direct is not None and not torch.compiler.is_compiling() and type(x) is torch.Tensor and not x.requires_grad
            and not torch._C._len_torch_dispatch_stack() and not torch._C._is_tracing())


from . import _fake  # noqa: E402,F401  (registers the fake implementations)
