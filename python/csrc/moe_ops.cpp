// torch.ops.fp4gemm.prepare_moe, release_moe and moe: an NVFP4 mixture-of-experts layer
// (include/fp4gemm/moe/moe_layer.hpp) through moe::MoeRunner. Experts come in the fused
// checkpoint layout (gate_up [E, 2I, H/2], down [E, H, I/2]; per-expert checkpoints are stacked
// into it by fp4gemm.torch.MoE). The checkpoint tensors are host tensors; x (and given routing) on
// a CUDA device runs there (cuda_moe, on the caller's current stream), the runner making its GPU
// layout of the experts on the first call. The fake of moe is in fp4gemm/_fake.py.
#include <torch/library.h>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "forward_ops.hpp"
#include "moe_table.hpp"
#include "weight_table.hpp"

#ifdef FP4GEMM_WITH_CUDA
#include <c10/cuda/CUDAGuard.h>
#endif

namespace fp4gemm::torch_ops {
namespace {

// A checkpoint tensor of prepare_moe: host memory, which the runners make their layouts from (a GPU
// runner copies the experts into GPU memory once; taking CUDA tensors here would hold them twice).
void require_host(const at::Tensor& tensor, const std::string& what) {
  if (!tensor.is_cpu()) {
    throw Error(ErrorCode::unsupported, what + " is on " + tensor.device().str() +
                                            ": prepare_moe takes the checkpoint's tensors in host memory (keep "
                                            "fp4gemm.torch.MoE on the CPU); x on a CUDA device runs the layer there, "
                                            "with the experts copied into GPU memory once");
  }
}

void require_placement(const at::Tensor& tensor, const at::Tensor& x, const std::string& what) {
  if (tensor.device() != x.device()) {
    throw_invalid(what + " is on " + tensor.device().str() + " but x on " + x.device().str() + "; give them on one device");
  }
}

at::Tensor expert_codes(const at::Tensor& codes, const std::string& what) {
  require_host(codes, "prepare_moe: " + what);
  if (codes.dim() != 3 || codes.scalar_type() != at::kByte) {
    throw_invalid("prepare_moe: " + what + " must be a 3-D uint8 tensor [E, N, K/2], got " +
                  std::string(c10::toString(codes.scalar_type())) + " " + shape_of(codes));
  }
  return codes.contiguous();
}

at::Tensor expert_scales(const at::Tensor& scales, const at::Tensor& codes, const std::string& what) {
  require_host(scales, "prepare_moe: " + what);
  const auto type = scales.scalar_type();
  if (scales.dim() != 3 || (type != at::kByte && type != at::kFloat8_e4m3fn) || scales.size(0) != codes.size(0) ||
      scales.size(1) != codes.size(1) || scales.size(2) * 8 != codes.size(2)) {
    throw_invalid("prepare_moe: " + what + " must be float8_e4m3fn or uint8 [" + std::to_string(codes.size(0)) + ", " +
                  std::to_string(codes.size(1)) + ", " + std::to_string(codes.size(2) / 8) + "] for codes " +
                  shape_of(codes) + ", got " + std::string(c10::toString(type)) + " " + shape_of(scales));
  }
  return scales.contiguous().view(at::kByte);
}

// A per-expert global scale given as one value, [E], or [E, 2] (gate's and up's, when `pairs`).
class PerExpertScale {
 public:
  PerExpertScale(const at::Tensor& values, std::int64_t experts, bool pairs, const std::string& what)
      : values_(values.to(at::kFloat).contiguous()), experts_(experts) {
    require_host(values, "prepare_moe: " + what);
    const std::int64_t count = values_.numel();
    if (count != 1 && count != experts && !(pairs && count == 2 * experts)) {
      throw_invalid("prepare_moe: " + what + " must hold one value or one per expert (" + std::to_string(experts) +
                    (pairs ? ", or [E, 2]" : "") + "), got " + shape_of(values));
    }
  }
  // The value of expert e; `column` 0 or 1 picks gate's or up's of an [E, 2] tensor.
  float at(std::int64_t e, int column) const {
    const float* data = values_.data_ptr<float>();
    const std::int64_t count = values_.numel();
    return count == 1 ? data[0] : count == experts_ ? data[e] : data[2 * e + column];
  }

 private:
  at::Tensor values_;
  std::int64_t experts_;
};

Nvfp4View expert_view(const at::Tensor& codes, const at::Tensor& scales, std::int64_t e, std::int64_t first_row,
                      std::int64_t rows, float global_scale) {
  const std::int64_t code_row = codes.size(2), scale_row = scales.size(2);
  Nvfp4View view;
  view.codes = codes.data_ptr<std::uint8_t>() + (e * codes.size(1) + first_row) * code_row;
  view.scales = scales.data_ptr<std::uint8_t>() + (e * scales.size(1) + first_row) * scale_row;
  view.global_scale = global_scale;
  view.rows = rows;
  view.cols = code_row * 2;
  view.codes_size_bytes = rows * code_row;
  view.scales_size_bytes = rows * scale_row;
  return view;
}

// A dense BF16/FP32 matrix [rows, cols] on the host (float16 is widened to float32).
at::Tensor dense_matrix(const at::Tensor& values, const std::string& what) {
  require_host(values, "prepare_moe: " + what);
  if (values.dim() != 2) throw_invalid("prepare_moe: " + what + " must be 2-D, got " + shape_of(values));
  dtype_of(values.scalar_type(), ("prepare_moe: " + what).c_str());
  return (values.scalar_type() == at::kHalf ? values.to(at::kFloat) : values).contiguous();
}

DenseView dense_view_of(const at::Tensor& values, const Placement& placement = {}) {
  return {values.data_ptr(), dtype_of(values.scalar_type(), "values"), values.size(0), values.size(1), values.size(1),
          placement.memory, placement.device, values.numel() * std::int64_t(values.element_size())};
}

moe::ExpertProjections shared_nvfp4(const std::vector<at::Tensor>& shared, std::vector<at::Tensor>& kept) {
  moe::ExpertProjections projections;
  Nvfp4View* views[3] = {&projections.gate, &projections.up, &projections.down};
  const char* names[3] = {"shared gate_proj", "shared up_proj", "shared down_proj"};
  for (int p = 0; p < 3; ++p) {
    const at::Tensor codes = expert_codes(shared[3 * p].unsqueeze(0), std::string(names[p]) + " codes");
    const at::Tensor scales = expert_scales(shared[3 * p + 1].unsqueeze(0), codes, std::string(names[p]) + " block scales");
    const PerExpertScale scale_2(shared[3 * p + 2], 1, false, std::string(names[p]) + " weight_scale_2");
    *views[p] = expert_view(codes, scales, 0, 0, codes.size(1), scale_2.at(0, 0));
    kept.push_back(codes);
    kept.push_back(scales);
  }
  return projections;
}

std::optional<moe::SharedExpert> shared_expert(const std::vector<at::Tensor>& shared,
                                               const std::optional<at::Tensor>& shared_gate, std::vector<at::Tensor>& kept) {
  if (shared.empty()) {
    if (shared_gate) throw_invalid("prepare_moe: a shared_gate was given without a shared expert");
    return std::nullopt;
  }
  moe::SharedExpert expert;
  if (shared.size() == 9) {
    expert.nvfp4 = shared_nvfp4(shared, kept);
  } else if (shared.size() == 3) {
    DenseView* views[3] = {&expert.dense_gate, &expert.dense_up, &expert.dense_down};
    const char* names[3] = {"the shared gate_proj", "the shared up_proj", "the shared down_proj"};
    for (int p = 0; p < 3; ++p) {
      kept.push_back(dense_matrix(shared[p], names[p]));
      *views[p] = dense_view_of(kept.back());
    }
  } else {
    throw_invalid("prepare_moe: shared must be [] (none), 3 dense tensors (gate_proj, up_proj, down_proj) or 9 NVFP4 "
                  "ones (codes, weight_scale, weight_scale_2 of each), got " + std::to_string(shared.size()));
  }
  if (shared_gate) {
    kept.push_back(dense_matrix(*shared_gate, "shared_gate"));
    expert.gate = dense_view_of(kept.back());
  }
  return expert;
}

std::int64_t prepare_moe(const at::Tensor& gate_up, const at::Tensor& gate_up_scale, const at::Tensor& gate_up_scale_2,
                         const at::Tensor& down, const at::Tensor& down_scale, const at::Tensor& down_scale_2,
                         const std::optional<at::Tensor>& router, const std::optional<at::Tensor>& gate_up_input_scale,
                         const std::optional<at::Tensor>& down_input_scale, std::optional<at::TensorList> shared,
                         const std::optional<at::Tensor>& shared_gate) {
  std::vector<at::Tensor> kept;
  const at::Tensor gate_up_codes = expert_codes(gate_up, "gate_up");
  const at::Tensor down_codes = expert_codes(down, "down");
  const std::int64_t experts = gate_up_codes.size(0), intermediate = gate_up_codes.size(1) / 2;
  if (down_codes.size(0) != experts || gate_up_codes.size(1) % 2 != 0) {
    throw_invalid("prepare_moe: gate_up " + shape_of(gate_up) + " and down " + shape_of(down) +
                  " must be [E, 2I, H/2] and [E, H, I/2] with one E");
  }
  const at::Tensor gate_up_scales = expert_scales(gate_up_scale, gate_up_codes, "gate_up_scale");
  const at::Tensor down_scales = expert_scales(down_scale, down_codes, "down_scale");
  const PerExpertScale gate_up_2(gate_up_scale_2, experts, true, "gate_up_scale_2");
  const PerExpertScale down_2(down_scale_2, experts, false, "down_scale_2");
  std::optional<PerExpertScale> gate_up_input, down_input;
  if (gate_up_input_scale) gate_up_input.emplace(*gate_up_input_scale, experts, true, "gate_up_input_scale");
  if (down_input_scale) down_input.emplace(*down_input_scale, experts, false, "down_input_scale");

  moe::MoeWeights weights;
  weights.layout = moe::ExpertLayout::fused_gate_up;
  for (std::int64_t e = 0; e < experts; ++e) {
    moe::ExpertProjections expert;
    expert.gate = expert_view(gate_up_codes, gate_up_scales, e, 0, intermediate, gate_up_2.at(e, 0));
    expert.up = expert_view(gate_up_codes, gate_up_scales, e, intermediate, intermediate, gate_up_2.at(e, 1));
    expert.down = expert_view(down_codes, down_scales, e, 0, down_codes.size(1), down_2.at(e, 0));
    // gate and up share one quantization of x: the larger of their input scales (as vLLM loads them).
    if (gate_up_input) expert.gate_up_input_scale = std::max(gate_up_input->at(e, 0), gate_up_input->at(e, 1));
    if (down_input) expert.down_input_scale = down_input->at(e, 0);
    weights.experts.push_back(expert);
  }
  kept.insert(kept.end(), {gate_up_codes, gate_up_scales, down_codes, down_scales});
  if (router) {
    kept.push_back(dense_matrix(*router, "router"));
    weights.router = dense_view_of(kept.back());
  }
  weights.shared = shared_expert(shared ? shared->vec() : std::vector<at::Tensor>{}, shared_gate, kept);
  return register_moe_layer(std::move(kept), std::move(weights));
}

void release_moe(std::int64_t layer_id) { release_moe_layer(layer_id); }

// Given routing as engines pass it: ids [T, k] (int32 or int64) and weights [T, k] (float).
struct GivenRouting {
  at::Tensor ids, weights;
};

std::optional<GivenRouting> given_routing(const std::optional<at::Tensor>& topk_ids,
                                          const std::optional<at::Tensor>& topk_weights, const at::Tensor& x,
                                          std::int64_t tokens) {
  if (!topk_ids && !topk_weights) return std::nullopt;
  if (!topk_ids || !topk_weights) throw_invalid("moe: give both topk_ids and topk_weights, or neither (the router routes)");
  require_placement(*topk_ids, x, "moe: topk_ids");
  require_placement(*topk_weights, x, "moe: topk_weights");
  const auto id_type = topk_ids->scalar_type();
  if (topk_ids->dim() != 2 || (id_type != at::kInt && id_type != at::kLong) || topk_ids->size(0) != tokens) {
    throw_invalid("moe: topk_ids must be int32 or int64 [T, k] with T = " + std::to_string(tokens) + " tokens, got " +
                  std::string(c10::toString(id_type)) + " " + shape_of(*topk_ids));
  }
  if (topk_weights->sizes() != topk_ids->sizes() || !at::isFloatingType(topk_weights->scalar_type())) {
    throw_invalid("moe: topk_weights must be floating point with topk_ids' shape " + shape_of(*topk_ids) + ", got " +
                  std::string(c10::toString(topk_weights->scalar_type())) + " " + shape_of(*topk_weights));
  }
  return GivenRouting{topk_ids->to(at::kInt).contiguous(), topk_weights->to(at::kFloat).contiguous()};
}

}  // namespace

at::Tensor moe(const at::Tensor& x, std::int64_t layer_id, const std::optional<at::Tensor>& topk_ids,
               const std::optional<at::Tensor>& topk_weights, std::int64_t top_k, bool norm_topk_prob,
               std::optional<at::ScalarType> out_dtype, c10::string_view backend, c10::string_view activation) {
  const Placement placement = placement_of(x);
  if (x.dim() < 1) throw_invalid("moe: x must have at least one dimension [..., H]");
  const DType x_type = dtype_of(x.scalar_type(), "moe: x");
  const at::ScalarType out_type = out_dtype.value_or(x.scalar_type());
  const DType o_type = dtype_of(out_type, "moe: out_dtype");
  const MoeTarget target = moe_target(layer_id, std::string(backend), placement);
  if (x.size(-1) != target.hidden) {
    throw_invalid("moe: x's last dimension " + std::to_string(x.size(-1)) + " is not the layer's hidden size " +
                  std::to_string(target.hidden));
  }
  const at::Tensor rows = x.reshape({-1, target.hidden}).contiguous();
  const std::int64_t tokens = rows.size(0);
  const std::optional<GivenRouting> routing = given_routing(topk_ids, topk_weights, x, tokens);
  moe::MoeCall call;
  call.x = dense_view_of(rows, placement);
  call.options.norm_topk_prob = norm_topk_prob;
  call.options.activation = x_type == DType::bf16 ? ActivationType::bf16 : ActivationType::f32;
  if (activation == "nvfp4") {
    call.options.activation = ActivationType::nvfp4;  // W4A4 with the layer's input scales
  } else if (activation != "auto") {
    throw_invalid("moe: activation must be \"auto\" (W4A16, x as given) or \"nvfp4\" (W4A4), not \"" +
                  std::string(activation) + "\"");
  }
  if (routing) {
    const std::int64_t width = routing->ids.size(1);
    if (top_k != 0 && top_k != width) {
      throw_invalid("moe: top_k = " + std::to_string(top_k) + " but topk_ids has " + std::to_string(width) + " per token");
    }
    call.options.top_k = int(width);
    call.routing.topk_ids = routing->ids.data_ptr<std::int32_t>();
    call.routing.topk_weights = routing->weights.data_ptr<float>();
    call.routing.memory = placement.memory;
    call.routing.device = placement.device;
  } else {
    if (top_k < 1) throw_invalid("moe: give top_k (experts per token, at least 1) when the layer's router routes");
    call.options.top_k = int(top_k);
  }
  at::Tensor out = at::empty({tokens, target.hidden}, x.options().dtype(out_type));
  const MutableDenseView o{out.data_ptr(), o_type, tokens, target.hidden, target.hidden, placement.memory, placement.device,
                           out.numel() * std::int64_t(out.element_size())};
#ifdef FP4GEMM_WITH_CUDA
  std::optional<c10::cuda::CUDAGuard> guard;
  if (placement.memory == Memory::cuda) guard.emplace(placement.device);
#endif
  target.runner->run(call, target.layer, o, context_for(placement));
  std::vector<std::int64_t> shape(x.sizes().begin(), x.sizes().end());
  return out.view(shape);
}

TORCH_LIBRARY_FRAGMENT(fp4gemm, m) {
  m.def("prepare_moe(Tensor gate_up, Tensor gate_up_scale, Tensor gate_up_scale_2, Tensor down, Tensor down_scale, "
        "Tensor down_scale_2, Tensor? router=None, Tensor? gate_up_input_scale=None, Tensor? down_input_scale=None, "
        "Tensor[]? shared=None, Tensor? shared_gate=None) -> int");
  m.def("release_moe(int layer_id) -> ()", &release_moe);
  m.def("moe(Tensor x, int layer_id, Tensor? topk_ids=None, Tensor? topk_weights=None, int top_k=0, "
        "bool norm_topk_prob=True, ScalarType? out_dtype=None, str backend=\"auto\", str activation=\"auto\") -> Tensor");
}

// The CUDA key runs the same code: moe on the device, prepare_moe refusing CUDA tensors with its sentence.
TORCH_LIBRARY_IMPL(fp4gemm, CPU, m) {
  m.impl("prepare_moe", &prepare_moe);
  m.impl("moe", &moe);
}
TORCH_LIBRARY_IMPL(fp4gemm, CUDA, m) {
  m.impl("prepare_moe", &prepare_moe);
  m.impl("moe", &moe);
}

}  // namespace fp4gemm::torch_ops
