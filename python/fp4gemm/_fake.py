"""Fake (meta) implementations of torch.ops.fp4gemm: shapes and dtypes only, so torch.compile and
FakeTensor tracing see through the ops without running them (and without graph breaks)."""
import torch


@torch.library.register_fake("fp4gemm::gemm")
def _gemm(activation, weight, weight_id, alpha, out_dtype=None, backend="auto"):
    torch._check(activation.dim() >= 1, lambda: "gemm: the activation must have at least one dimension [..., K]")
    torch._check(weight.dim() == 2, lambda: "gemm: the weight codes must be 2-D [N, K/2]")
    torch._check(activation.shape[-1] == weight.shape[1] * 2,
                 lambda: f"gemm: the activation's K = {activation.shape[-1]} does not match the weight's "
                         f"K = {weight.shape[1] * 2}")
    dtype = out_dtype if out_dtype is not None else activation.dtype
    return activation.new_empty((*activation.shape[:-1], weight.shape[0]), dtype=dtype)


@torch.library.register_fake("fp4gemm::gemm_out")
def _gemm_out(activation, weight, weight_id, alpha, out, backend="auto"):
    torch._check(activation.dim() >= 1, lambda: "gemm_out: the activation must have at least one dimension [..., K]")
    torch._check(weight.dim() == 2, lambda: "gemm_out: the weight codes must be 2-D [N, K/2]")
    torch._check(tuple(out.shape) == (*activation.shape[:-1], weight.shape[0]),
                 lambda: f"gemm_out: out is {list(out.shape)} but the activation and weight give "
                         f"{[*activation.shape[:-1], weight.shape[0]]}")


@torch.library.register_fake("fp4gemm::gemm_nvfp4")
def _gemm_nvfp4(activation, activation_scale, weight, weight_id, alpha, out_dtype=None, backend="auto"):
    torch._check(activation.dim() == 2 and weight.dim() == 2,
                 lambda: "gemm_nvfp4: the activation codes [M, K/2] and weight codes [N, K/2] must be 2-D")
    torch._check(activation.shape[1] == weight.shape[1],
                 lambda: f"gemm_nvfp4: the activation's K = {activation.shape[1] * 2} does not match the weight's "
                         f"K = {weight.shape[1] * 2}")
    dtype = out_dtype if out_dtype is not None else torch.bfloat16
    return activation.new_empty((activation.shape[0], weight.shape[0]), dtype=dtype)


def _nvfp4_outputs(values):
    rows, cols = values.shape
    return (values.new_empty((rows, cols // 2), dtype=torch.uint8),
            values.new_empty((rows, cols // 16), dtype=torch.float8_e4m3fn),
            values.new_empty((), dtype=torch.float32))


@torch.library.register_fake("fp4gemm::quantize_weight")
def _quantize_weight(weight):
    return _nvfp4_outputs(weight)


@torch.library.register_fake("fp4gemm::quantize_activation")
def _quantize_activation(activation, input_scale=None):
    return _nvfp4_outputs(activation)


@torch.library.register_fake("fp4gemm::prepare")
def _prepare(weight, weight_scale, weight_scale_2):
    # prepare is load-time work: its id is a fresh integer the tracer cannot know.
    return torch.library.get_ctx().new_dynamic_size()


@torch.library.register_fake("fp4gemm::prepare_moe")
def _prepare_moe(gate_up, gate_up_scale, gate_up_scale_2, down, down_scale, down_scale_2, router=None,
                 gate_up_input_scale=None, down_input_scale=None, shared=None, shared_gate=None):
    return torch.library.get_ctx().new_dynamic_size()


@torch.library.register_fake("fp4gemm::moe")
def _moe(x, layer_id, topk_ids=None, topk_weights=None, top_k=0, norm_topk_prob=True, out_dtype=None,
         backend="auto", activation="auto"):
    torch._check(x.dim() >= 1, lambda: "moe: x must have at least one dimension [..., H]")
    return x.new_empty(x.shape, dtype=out_dtype if out_dtype is not None else x.dtype)
