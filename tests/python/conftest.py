"""Shared helpers of the Python suite: an NVFP4 dequantizer written here from the format's
definition (docs NVFP4.md), independent of the library, so the ops are checked against it."""
import os

import pytest
import torch

import fp4gemm  # noqa: F401  (loads the extension; set FP4GEMM_TORCH_LIBRARY for a build tree)

E2M1_VALUES = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]
CUDA = torch.cuda.is_available()
requires_cuda = pytest.mark.skipif(not CUDA, reason="no CUDA GPU: the CUDA tests run on the GPU machine")


def e2m1_table() -> torch.Tensor:
    return torch.tensor(E2M1_VALUES + [-v for v in E2M1_VALUES], dtype=torch.float32)


def dequantize(codes: torch.Tensor, scales: torch.Tensor, global_scale=1.0) -> torch.Tensor:
    """FP32 [N, K] from codes uint8 [N, K/2] (element 2i in the low nibble) and E4M3 scales [N, K/16]."""
    codes = codes.cpu()
    low, high = (codes & 0x0F).long(), (codes >> 4).long()
    nibbles = torch.stack([low, high], dim=-1).reshape(codes.shape[0], -1)
    values = e2m1_table()[nibbles]
    block_scales = scales.cpu().view(torch.float8_e4m3fn).float().repeat_interleave(16, dim=1)
    return values * block_scales * float(global_scale)


def random_weight(n: int, k: int, seed: int):
    """A random NVFP4 checkpoint weight: (codes, scales, weight_scale_2)."""
    generator = torch.Generator().manual_seed(seed)
    weight = torch.randn(n, k, generator=generator) * 0.05
    return fp4gemm.ops.quantize_weight(weight)


def poisoned(shape, dtype=torch.float32):
    return torch.full(shape, float("nan"), dtype=dtype)


@pytest.fixture
def cli():
    path = os.environ.get("FP4GEMM_CLI")
    if not path:
        pytest.skip("FP4GEMM_CLI is not set (ctest sets it to the built fp4gemm binary)")
    return path
