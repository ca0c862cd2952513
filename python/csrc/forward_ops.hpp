#pragma once
// The ops a forward pass calls (gemm, gemm_out: ops.cpp; moe: moe_ops.cpp). Each body is registered
// twice: as torch.ops.fp4gemm.<name> (TORCH_LIBRARY, what torch.compile traces and engines call) and
// as a direct Python binding of the same _C.so (direct_bindings.cpp), which fp4gemm.torch's modules
// call in eager mode to skip the dispatcher's Python argument parsing (docs/PYTHON.md).
#include <ATen/ATen.h>

#include <cstdint>
#include <optional>

namespace fp4gemm::torch_ops {

// W4A16: alpha * activation [..., K] (float32 or bfloat16) @ W^T -> [..., N] in out_dtype
// (default: the activation's); `weight` the codes tensor prepared as `weight_id`.
at::Tensor gemm(const at::Tensor& activation, const at::Tensor& weight, std::int64_t weight_id, double alpha,
                std::optional<at::ScalarType> out_dtype, c10::string_view backend);

// gemm into the caller's `out` [..., N].
void gemm_out(const at::Tensor& activation, const at::Tensor& weight, std::int64_t weight_id, double alpha,
              const at::Tensor& out, c10::string_view backend);

// The MoE layer `layer_id` (prepare_moe) on x [..., H]: routed by its router with top_k, or by the
// given topk_ids and topk_weights [T, k].
at::Tensor moe(const at::Tensor& x, std::int64_t layer_id, const std::optional<at::Tensor>& topk_ids,
               const std::optional<at::Tensor>& topk_weights, std::int64_t top_k, bool norm_topk_prob,
               std::optional<at::ScalarType> out_dtype, c10::string_view backend, c10::string_view activation);

}  // namespace fp4gemm::torch_ops
