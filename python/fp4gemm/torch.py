"""fp4gemm.torch: nn.Module layers over torch.ops.fp4gemm.

Linear holds the checkpoint's NVFP4 tensors as buffers and the id prepare() gave them; forward is
one gemm op (plus the bias), so it traces under torch.compile(fullgraph=True) and, on CUDA, runs
on the current stream and is captured by CUDA graphs. Run one eager forward per (device, M range)
before capturing: the runner makes a backend's layout and proves its kernel the first time that
backend serves the weight, which allocates. The MoE layer's module goes here when its op lands.
"""
import weakref
from typing import Optional

import torch
from torch import nn

from ._library import ops

__all__ = ["Linear"]


class Linear(nn.Module):
    """y = x @ W^T (+ bias) with W an NVFP4 weight in ModelOpt's layout (W4A16: x stays 16/32-bit)."""

    def __init__(self, weight: torch.Tensor, weight_scale: torch.Tensor, weight_scale_2: torch.Tensor,
                 bias: Optional[torch.Tensor] = None, input_scale: Optional[torch.Tensor] = None,
                 out_dtype: Optional[torch.dtype] = None, backend: str = "auto"):
        super().__init__()
        self.register_buffer("weight", weight.contiguous())
        # The E4M3 scales as their bytes: module.to(dtype) / .half() would otherwise convert FP8 values.
        self.register_buffer("weight_scale", weight_scale.contiguous().view(torch.uint8))
        self.register_buffer("weight_scale_2", weight_scale_2.reshape(()).to(torch.float32))
        self.register_buffer("input_scale", None if input_scale is None else input_scale.reshape(()).float())
        self.register_buffer("bias", bias)
        self.out_features = weight.shape[0]
        self.in_features = weight.shape[1] * 2
        self.out_dtype = out_dtype
        self.backend = backend
        # alpha folds the global scale in (W4A16): read once here, a constant to the compiled graph.
        self.alpha = float(self.weight_scale_2)
        self.weight_id = -1
        self._release = None
        self._prepare()

    def _prepare(self):
        if self._release is not None:
            self._release()  # the old id served the tensors before a move
        self.weight_id = int(ops.prepare(self.weight, self.weight_scale, self.weight_scale_2))
        self._release = weakref.finalize(self, ops.release, self.weight_id)

    def _apply(self, fn, *args, **kwargs):
        # .to(device) / .cuda() replace the buffers: the weight is prepared again where it now lives.
        result = super()._apply(fn, *args, **kwargs)
        self._prepare()
        return result

    @classmethod
    def from_checkpoint(cls, directory: str, prefix: str, device="cpu", out_dtype: Optional[torch.dtype] = None,
                        backend: str = "auto") -> "Linear":
        """Loads layer `prefix` (e.g. "model.layers.0.mlp.down_proj") of the NVFP4 checkpoint in
        `directory` (ModelOpt or compressed-tensors, one file or sharded) with the C++ loader."""
        weight, weight_scale, weight_scale_2, input_scale, bias = ops.load_linear(str(directory), prefix)
        return cls(weight.to(device), weight_scale.to(device), weight_scale_2.to(device),
                   bias=bias.to(device) if bias.numel() else None,
                   input_scale=input_scale if input_scale.numel() else None, out_dtype=out_dtype, backend=backend)

    @classmethod
    def from_linear(cls, linear: nn.Linear, out_dtype: Optional[torch.dtype] = None, backend: str = "auto") -> "Linear":
        """Quantizes an nn.Linear's weight with ModelOpt's recipe (the bias stays as it is)."""
        codes, scales, global_scale = ops.quantize_weight(linear.weight.detach())
        bias = None if linear.bias is None else linear.bias.detach().clone()
        return cls(codes, scales, global_scale, bias=bias, out_dtype=out_dtype, backend=backend)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = ops.gemm(x, self.weight, self.weight_id, self.alpha, self.out_dtype, self.backend)
        return y if self.bias is None else y + self.bias.to(y.dtype)

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}, backend={self.backend!r}")
