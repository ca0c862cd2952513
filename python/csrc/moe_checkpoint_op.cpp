// torch.ops.fp4gemm.load_moe: one MoE layer of a ModelOpt-style NVFP4 checkpoint through the C++
// loader (io::load_moe_layer), as CPU tensors in prepare_moe's argument order. Per-expert
// checkpoints are stacked into the fused layout, so the op and the module take one form.
#include <ATen/ATen.h>
#include <torch/library.h>

#include <cstring>
#include <string>
#include <vector>

#include "fp4gemm/io/checkpoint.hpp"
#include "fp4gemm/io/moe_checkpoint.hpp"

namespace fp4gemm::torch_ops {
namespace {

// Copies `rows` code rows and their scale rows of `view` into codes[e] / scales[e] at `first_row`.
void copy_rows(const Nvfp4View& view, at::Tensor& codes, at::Tensor& scales, std::int64_t e, std::int64_t first_row) {
  const std::int64_t code_row = view.cols / 2, scale_row = view.cols / 16;
  std::memcpy(codes.data_ptr<std::uint8_t>() + (e * codes.size(1) + first_row) * code_row, view.codes,
              view.rows * code_row);
  std::memcpy(scales.data_ptr<std::uint8_t>() + (e * scales.size(1) + first_row) * scale_row, view.scales,
              view.rows * scale_row);
}

at::Tensor dense_tensor(const DenseView& view) {
  const at::ScalarType type = view.dtype == DType::f32 ? at::kFloat : view.dtype == DType::bf16 ? at::kBFloat16 : at::kHalf;
  at::Tensor out = at::empty({view.rows, view.cols}, at::TensorOptions().dtype(type));
  const std::int64_t row_bytes = view.cols * std::int64_t(out.element_size());
  for (std::int64_t r = 0; r < view.rows; ++r) {
    std::memcpy(static_cast<char*>(out.data_ptr()) + r * row_bytes,
                static_cast<const char*>(view.data) + r * view.stride() * out.element_size(), row_bytes);
  }
  return out;
}

at::Tensor empty_f32() { return at::empty({0}, at::TensorOptions().dtype(at::kFloat)); }

at::Tensor values_or_empty(const std::vector<float>& values) {
  bool any = false;
  for (float v : values) any = any || v != 0.0f;  // 0: the checkpoint has no input_scale
  if (!any) return empty_f32();
  return at::tensor(values, at::TensorOptions().dtype(at::kFloat));
}

// The three projections of one NVFP4 expert as 9 tensors: codes, block scales, weight_scale_2 each.
std::vector<at::Tensor> projection_tensors(const moe::ExpertProjections& expert) {
  std::vector<at::Tensor> out;
  for (const Nvfp4View* view : {&expert.gate, &expert.up, &expert.down}) {
    at::Tensor codes = at::empty({1, view->rows, view->cols / 2}, at::TensorOptions().dtype(at::kByte));
    at::Tensor scales = at::empty({1, view->rows, view->cols / 16}, at::TensorOptions().dtype(at::kByte));
    copy_rows(*view, codes, scales, 0, 0);
    out.push_back(codes[0]);
    out.push_back(scales[0].view(at::kFloat8_e4m3fn));
    out.push_back(at::full({}, view->global_scale, at::TensorOptions().dtype(at::kFloat)));
  }
  return out;
}

// (experts: gate_up uint8 [E, 2I, H/2], gate_up_scale fp8 [E, 2I, H/16], gate_up_scale_2 [E, 2],
//  down [E, H, I/2], down_scale [E, H, I/16], down_scale_2 [E], router [E, H] or [0],
//  gate_up_input_scale [E] or [0], down_input_scale [E] or [0];
//  shared: [] or 3 dense or 9 NVFP4 tensors; shared_gate [1, H] or [0];
//  top_k (config.json's num_experts_per_tok, 0 when absent); norm_topk_prob 1, 0, or -1 when absent)
std::tuple<std::vector<at::Tensor>, std::vector<at::Tensor>, at::Tensor, std::int64_t, std::int64_t> load_moe(
    c10::string_view directory, c10::string_view prefix) {
  const io::Checkpoint checkpoint = io::Checkpoint::open(std::string(directory));
  const io::MoeLayerTensors layer = io::load_moe_layer(checkpoint, std::string(prefix));
  const moe::MoeWeights weights = layer.weights();
  const std::int64_t experts = weights.num_experts(), hidden = weights.hidden(), inter = weights.intermediate();
  const auto bytes = at::TensorOptions().dtype(at::kByte);
  at::Tensor gate_up = at::empty({experts, 2 * inter, hidden / 2}, bytes);
  at::Tensor gate_up_scale = at::empty({experts, 2 * inter, hidden / 16}, bytes);
  at::Tensor down = at::empty({experts, hidden, inter / 2}, bytes);
  at::Tensor down_scale = at::empty({experts, hidden, inter / 16}, bytes);
  at::Tensor gate_up_scale_2 = at::empty({experts, 2}, at::TensorOptions().dtype(at::kFloat));
  at::Tensor down_scale_2 = at::empty({experts}, at::TensorOptions().dtype(at::kFloat));
  std::vector<float> gate_up_input(experts), down_input(experts);
  for (std::int64_t e = 0; e < experts; ++e) {
    const moe::ExpertProjections& expert = weights.experts[e];
    copy_rows(expert.gate, gate_up, gate_up_scale, e, 0);
    copy_rows(expert.up, gate_up, gate_up_scale, e, inter);
    copy_rows(expert.down, down, down_scale, e, 0);
    gate_up_scale_2[e][0] = expert.gate.global_scale;
    gate_up_scale_2[e][1] = expert.up.global_scale;
    down_scale_2[e] = expert.down.global_scale;
    gate_up_input[e] = expert.gate_up_input_scale;
    down_input[e] = expert.down_input_scale;
  }
  std::vector<at::Tensor> expert_tensors{
      gate_up, gate_up_scale.view(at::kFloat8_e4m3fn), gate_up_scale_2, down, down_scale.view(at::kFloat8_e4m3fn),
      down_scale_2, weights.router.data ? dense_tensor(weights.router) : empty_f32(), values_or_empty(gate_up_input),
      values_or_empty(down_input)};
  std::vector<at::Tensor> shared;
  at::Tensor shared_gate = empty_f32();
  if (weights.shared) {
    if (weights.shared->nvfp4) {
      shared = projection_tensors(*weights.shared->nvfp4);
    } else {
      shared = {dense_tensor(weights.shared->dense_gate), dense_tensor(weights.shared->dense_up),
                dense_tensor(weights.shared->dense_down)};
    }
    if (weights.shared->gate.data) shared_gate = dense_tensor(weights.shared->gate);
  }
  const std::int64_t top_k = layer.routing.num_experts_per_tok.value_or(0);
  const std::int64_t normalize = layer.routing.norm_topk_prob ? std::int64_t(*layer.routing.norm_topk_prob) : -1;
  return {expert_tensors, shared, shared_gate, top_k, normalize};
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(fp4gemm, m) {
  m.def("load_moe(str directory, str prefix) -> (Tensor[], Tensor[], Tensor, int, int)", &load_moe);
}

}  // namespace fp4gemm::torch_ops
