"""fp4gemm: NVFP4 GEMMs on CPUs and NVIDIA GPUs as PyTorch custom ops (torch.ops.fp4gemm), with the
runner that picks, proves and explains a backend for each problem. See docs/PYTHON.md.

    import fp4gemm, fp4gemm.torch
    layer = fp4gemm.torch.Linear.from_checkpoint("model_dir", "model.layers.0.mlp.down_proj")
    y = layer(x)                      # x: [..., K] bfloat16 or float32, CPU or CUDA
    moe = fp4gemm.torch.MoE.from_checkpoint("model_dir", "model.layers.0.mlp")
    y = moe(x)                        # x: [..., H] bfloat16 or float32, CPU
    y = fp4gemm.direct.gemm(x, layer.weight, layer.weight_id, layer.alpha)  # ops.gemm, eager, no dispatcher
"""
import json
from typing import Any, NamedTuple, Optional

import torch as _torch  # `torch` in this namespace is the submodule fp4gemm.torch once imported

from ._library import direct, ops

__all__ = ["ops", "direct", "info", "explain", "explain_moe", "resident", "quantize_weight", "quantize_activation", "Nvfp4Tensor",
           "as_tensor"]
__version__ = "0.1.0"


class Nvfp4Tensor(NamedTuple):
    """An NVFP4 matrix as a ModelOpt checkpoint stores it: value = e2m1(codes) * scales * global_scale."""
    codes: Any          # uint8 [rows, cols/2], element 2i in the low nibble
    scales: Any         # float8_e4m3fn [rows, cols/16] (uint8 for NumPy, which has no FP8 dtype)
    global_scale: Any   # float32 []: weight_scale_2 for weights, input_scale for activations


def as_tensor(values) -> _torch.Tensor:
    """A torch.Tensor for a tensor, a NumPy array or any DLPack-capable array (shared, not copied)."""
    if isinstance(values, _torch.Tensor):
        return values
    if hasattr(values, "__dlpack__"):
        return _torch.from_dlpack(values)
    return _torch.as_tensor(values)


def _like_input(result: Nvfp4Tensor, values) -> Nvfp4Tensor:
    if isinstance(values, _torch.Tensor):
        return result
    # NumPy in, NumPy out (FP8 scales as their uint8 bytes).
    return Nvfp4Tensor(result.codes.numpy(), result.scales.view(_torch.uint8).numpy(), result.global_scale.numpy())


def quantize_weight(weight) -> Nvfp4Tensor:
    """BF16/FP16/FP32 [N, K] -> NVFP4 with ModelOpt's recipe, byte-identical to `fp4gemm quantize`."""
    return _like_input(Nvfp4Tensor(*ops.quantize_weight(as_tensor(weight))), weight)


def quantize_activation(activation, input_scale: Optional[float] = None) -> Nvfp4Tensor:
    """[M, K] -> NVFP4 as the Blackwell runtime kernels quantize activations; input_scale defaults
    to amax / (6 * 448)."""
    return _like_input(Nvfp4Tensor(*ops.quantize_activation(as_tensor(activation), input_scale)), activation)


def info() -> dict:
    """What `fp4gemm info --json` prints: devices, each compiled-in backend's verdict, summaries."""
    return json.loads(ops.info())


def resident(weight_id: int) -> dict:
    """What a prepared weight's layouts hold now ({"device_bytes", "host_bytes", "by_backend"}):
    each backend makes its layout the first time it serves the weight, so this grows with use."""
    return json.loads(ops.resident(weight_id))


def explain(m: int, n: int, k: int, activation: str = "bf16", output: str = "bf16", backend: str = "auto",
            device: str = "auto") -> dict:
    """What `fp4gemm explain --json` prints for one GEMM, plus "text": the report it prints without --json."""
    return json.loads(ops.explain(m, n, k, activation, output, backend, device))


def explain_moe(tokens: int, experts: int, top_k: int, hidden: int, intermediate: int, shared_intermediate: int = 0,
                routing_given: bool = False, backend: str = "auto", device: str = "auto") -> dict:
    """What `fp4gemm explain --moe --json` prints for an MoE layer at `tokens` (routed by its router
    unless `routing_given`): candidates, choice and the chosen backend's plan, plus "text"."""
    return json.loads(ops.explain_moe(tokens, experts, top_k, hidden, intermediate, shared_intermediate, routing_given,
                                      backend, device))
