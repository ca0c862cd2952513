"""fp4gemm.torch: nn.Module layers over torch.ops.fp4gemm.

Linear holds the checkpoint's NVFP4 tensors as buffers and the id prepare() gave them; forward is
one gemm op (plus the bias), so it traces under torch.compile(fullgraph=True) and, on CUDA, runs
on the current stream and is captured by CUDA graphs. Run one eager forward per (device, M range)
before capturing: the runner makes a backend's layout and proves its kernel the first time that
backend serves the weight, which allocates. In eager mode both modules call the op's direct binding
instead (the same C++ function without the dispatcher's Python path, which at M = 1 costs the host
more than the GEMM's own call; fp4gemm/_library.py). MoE is the mixture-of-experts layer over
torch.ops.fp4gemm.moe: its checkpoint tensors stay on the CPU, and x on a CUDA device runs it there.
"""
import weakref
from typing import Optional, Sequence

import torch
from torch import nn

from ._library import direct, ops, use_direct

__all__ = ["Linear", "MoE"]


class _Prepared(nn.Module):
    """A module whose tensors are recorded in the extension under an id: prepared at construction
    and again after .to() (which replaces the buffers), released when the module is collected."""

    def _prepare_id(self) -> int:
        raise NotImplementedError

    _release_op = None

    def _prepare(self):
        if getattr(self, "_release", None) is not None:
            self._release()  # the old id served the tensors before a move
        prepared = int(self._prepare_id())
        self._release = weakref.finalize(self, type(self)._release_op, prepared)
        return prepared

    def _apply(self, fn, *args, **kwargs):
        # .to(device) / .cuda() replace the buffers: the tensors are prepared again where they now live.
        result = super()._apply(fn, *args, **kwargs)
        self._on_moved()
        return result


class Linear(_Prepared):
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
        self._release = None
        self._on_moved()

    _release_op = ops.release

    def _prepare_id(self) -> int:
        return ops.prepare(self.weight, self.weight_scale, self.weight_scale_2)

    def _on_moved(self):
        self.weight_id = self._prepare()
        # The eager path's own references to the codes and bias, plain attributes: a buffer is found
        # by nn.Module.__getattr__ after a failed lookup (~0.7 us a read at M = 1). Refreshed with the
        # id whenever .to() replaces the buffers; load_state_dict copies into the same tensors.
        self._eager_codes, self._eager_bias = self.weight, self.bias

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
        if use_direct(x):
            y = direct.gemm(x, self._eager_codes, self.weight_id, self.alpha, self.out_dtype, self.backend)
            bias = self._eager_bias
        else:  # what torch.compile and the dispatch modes see: the op on the module's buffers
            y = ops.gemm(x, self.weight, self.weight_id, self.alpha, self.out_dtype, self.backend)
            bias = self.bias
        return y if bias is None else y + bias.to(y.dtype)

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}, backend={self.backend!r}")


def _optional(tensor: torch.Tensor) -> Optional[torch.Tensor]:
    return tensor if tensor.numel() else None


class MoE(_Prepared):
    """A mixture-of-experts layer over NVFP4 experts (docs/MOE.md): route (the router, softmax,
    top-k) or given top-k ids and weights, SiLU(x gate^T) * (x up^T) then down per expert, the
    weighted sum, plus an optional shared expert. W4A16, or W4A4 with activation="nvfp4" and the
    checkpoint's input scales. Keep the module (its checkpoint tensors) on the CPU: x on a CUDA
    device runs the layer there, the experts copied into GPU memory once, on the first call.

    Experts in the fused checkpoint layout: gate_up uint8 [E, 2I, H/2] (gate rows, then up rows),
    down [E, H, I/2], block scales [E, N, K/16], weight_scale_2 one value, [E] or [E, 2].
    `shared` is [] (none), 3 dense tensors (gate_proj, up_proj, down_proj) or 9 NVFP4 ones."""

    def __init__(self, gate_up: torch.Tensor, gate_up_scale: torch.Tensor, gate_up_scale_2: torch.Tensor,
                 down: torch.Tensor, down_scale: torch.Tensor, down_scale_2: torch.Tensor,
                 router: Optional[torch.Tensor] = None, top_k: int = 0, norm_topk_prob: bool = True,
                 gate_up_input_scale: Optional[torch.Tensor] = None, down_input_scale: Optional[torch.Tensor] = None,
                 shared: Sequence[torch.Tensor] = (), shared_gate: Optional[torch.Tensor] = None,
                 out_dtype: Optional[torch.dtype] = None, backend: str = "auto", activation: str = "auto"):
        super().__init__()
        # E4M3 scales kept as their bytes and the FP32 global scales as their bits (int32), so
        # module.to(dtype) converts the router and a dense shared expert but leaves them exact.
        self._bit_buffers = set()
        for name, value in (("gate_up", gate_up), ("gate_up_scale", gate_up_scale.view(torch.uint8)),
                            ("gate_up_scale_2", gate_up_scale_2), ("down", down),
                            ("down_scale", down_scale.view(torch.uint8)), ("down_scale_2", down_scale_2),
                            ("router", router), ("gate_up_input_scale", gate_up_input_scale),
                            ("down_input_scale", down_input_scale), ("shared_gate", shared_gate)):
            self._register(name, value, global_scale="scale_2" in name or "input_scale" in name)
        self._shared_names = []
        for index, value in enumerate(shared):
            if value.dtype == torch.float8_e4m3fn:
                value = value.view(torch.uint8)
            # 9 NVFP4 tensors: codes, block scales, weight_scale_2 of each projection
            self._register(f"shared_{index}", value, global_scale=len(shared) == 9 and index % 3 == 2)
            self._shared_names.append(f"shared_{index}")
        self.num_experts, self.hidden_size = gate_up.shape[0], gate_up.shape[2] * 2
        self.intermediate_size = gate_up.shape[1] // 2
        self.top_k = int(top_k)
        self.norm_topk_prob = bool(norm_topk_prob)
        self.out_dtype = out_dtype
        self.backend = backend
        self.activation = activation  # "auto": W4A16; "nvfp4": W4A4 with the input scales
        self._release = None
        self.layer_id = self._prepare()

    _release_op = ops.release_moe

    def _register(self, name: str, value: Optional[torch.Tensor], global_scale: bool):
        if value is not None and global_scale:
            value = value.to(torch.float32).view(torch.int32)
            self._bit_buffers.add(name)
        self.register_buffer(name, None if value is None else value.contiguous())

    def _tensor(self, name: str) -> Optional[torch.Tensor]:
        value = getattr(self, name)
        return value.view(torch.float32) if name in self._bit_buffers and value is not None else value

    def _prepare_id(self) -> int:
        names = ("gate_up", "gate_up_scale", "gate_up_scale_2", "down", "down_scale", "down_scale_2", "router",
                 "gate_up_input_scale", "down_input_scale")
        return ops.prepare_moe(*(self._tensor(name) for name in names), [self._tensor(n) for n in self._shared_names],
                               self._tensor("shared_gate"))

    def _on_moved(self):
        self.layer_id = self._prepare()

    @classmethod
    def from_checkpoint(cls, directory: str, prefix: str, top_k: Optional[int] = None,
                        out_dtype: Optional[torch.dtype] = None, backend: str = "auto",
                        activation: str = "auto") -> "MoE":
        """Loads MoE layer `prefix` (e.g. "model.layers.0.mlp") of the NVFP4 checkpoint in `directory`
        with the C++ loader (fused or per-expert experts, router, shared expert); top-k and
        norm_topk_prob from its config.json unless `top_k` is given."""
        experts, shared, shared_gate, config_top_k, normalize = ops.load_moe(str(directory), prefix)
        gate_up, gate_up_scale, gate_up_scale_2, down, down_scale, down_scale_2, router, gu_input, down_input = experts
        return cls(gate_up, gate_up_scale, gate_up_scale_2, down, down_scale, down_scale_2, router=_optional(router),
                   top_k=top_k if top_k is not None else config_top_k, norm_topk_prob=normalize != 0,
                   gate_up_input_scale=_optional(gu_input), down_input_scale=_optional(down_input), shared=shared,
                   shared_gate=_optional(shared_gate), out_dtype=out_dtype, backend=backend, activation=activation)

    def forward(self, x: torch.Tensor, topk_ids: Optional[torch.Tensor] = None,
                topk_weights: Optional[torch.Tensor] = None) -> torch.Tensor:
        """x [..., H]; routing by the router, or the given ids and weights [T, k] (T = x's rows)."""
        moe = direct.moe if use_direct(x) else ops.moe
        return moe(x, self.layer_id, topk_ids, topk_weights, self.top_k if topk_ids is None else 0,
                   self.norm_topk_prob, self.out_dtype, self.backend, self.activation)

    def extra_repr(self) -> str:
        return (f"experts={self.num_experts}, hidden={self.hidden_size}, intermediate={self.intermediate_size}, "
                f"top_k={self.top_k}, router={self.router is not None}, shared={bool(self._shared_names)}, "
                f"backend={self.backend!r}")
