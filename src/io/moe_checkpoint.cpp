// Loading one MoE layer of a checkpoint as moe::MoeWeights: per-expert or fused NVFP4 experts,
// the router, the shared expert (NVFP4 or dense) and its gate, each validated before use.
#include "fp4gemm/io/moe_checkpoint.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <tuple>

#include "fp4gemm/format/scale_layout.hpp"
#include "fp4gemm/io/modelopt.hpp"
#include "fp4gemm/io/tensor_convert.hpp"
#include "io/moe_tensor_names.hpp"

namespace fp4gemm::io {
namespace {

[[noreturn]] void bad_tensor(const TensorView& tensor, const std::string& what) {
  throw_io(*tensor.file + ": tensor '" + tensor.name() + "' " + what);
}

TensorView require(const Checkpoint& checkpoint, const std::optional<TensorView>& tensor, const std::string& name,
                   const std::string& role) {
  if (!tensor) throw_io(checkpoint.description() + ": has no tensor '" + name + "' (" + role + ")");
  return *tensor;
}

// ModelOpt's input_scale of gate and up may differ when they were calibrated apart; the fused
// GEMM quantizes x once, with the larger (as vLLM and TensorRT-LLM load them).
float larger_input_scale(const std::optional<float>& gate, const std::optional<float>& up) {
  return std::max(gate.value_or(0.0f), up.value_or(0.0f));
}

// A dense 2-D tensor [rows, cols] (BF16, F16 or F32) copied into an aligned buffer.
template <typename Copy>
Copy dense_copy(const TensorView& tensor, std::int64_t rows, std::int64_t cols) {
  if (tensor.shape() != std::vector<std::int64_t>{rows, cols} || !is_floating_point(tensor.dtype())) {
    bad_tensor(tensor, std::string("is ") + to_string(tensor.dtype()) + " " + tensor.entry->shape_string() + ", but the layer needs BF16, F16 or F32 [" +
                           std::to_string(rows) + ", " + std::to_string(cols) + "]");
  }
  Copy copy;
  copy.rows = rows;
  copy.cols = cols;
  if (tensor.dtype() == TensorDType::f32) {
    copy.dtype = DType::f32;
    copy.f32 = tensor_to_float(tensor);
  } else {
    copy.dtype = tensor.dtype() == TensorDType::bf16 ? DType::bf16 : DType::f16;
    copy.half.resize(std::size_t(rows * cols));
    if (!copy.half.empty()) std::memcpy(copy.half.data(), tensor.data, tensor.entry->byte_size());
  }
  return copy;
}

// Per-expert values of a fused scale tensor: [] / [1] (one for all), [E] / [E, 1], or [E, 2]
// (column `column`; -1 takes the larger of the two). Every value finite and >= 0 (> 0 unless
// `allow_zero`).
std::vector<float> per_expert_scales(const TensorView& tensor, std::int64_t experts, int column, bool allow_zero) {
  const std::vector<std::int64_t>& shape = tensor.shape();
  const std::vector<float> values = tensor_to_float(tensor);
  const bool shared = values.size() == 1 && shape.size() <= 1;
  const bool one_column = (shape == std::vector<std::int64_t>{experts}) || (shape == std::vector<std::int64_t>{experts, 1});
  const bool two_columns = shape == std::vector<std::int64_t>{experts, 2};
  if (!shared && !one_column && !(two_columns && column != 0)) {
    bad_tensor(tensor, "has shape " + tensor.entry->shape_string() + "; a fused expert scale is [], [E] = [" + std::to_string(experts) +
                           "]" + (column != 0 ? " or [E, 2] (gate's, up's)" : ""));
  }
  std::vector<float> scales(static_cast<std::size_t>(experts));
  for (std::int64_t e = 0; e < experts; ++e) {
    float value = shared ? values[0] : one_column ? values[std::size_t(e)] : 0.0f;
    if (two_columns) {
      const float gate = values[std::size_t(2 * e)], up = values[std::size_t(2 * e + 1)];
      value = column == 1 ? gate : column == 2 ? up : std::max(gate, up);
    }
    if (!std::isfinite(value) || value < 0.0f || (value == 0.0f && !allow_zero)) {
      bad_tensor(tensor, "holds " + std::to_string(value) + " for expert " + std::to_string(e) + ", not a " +
                             (allow_zero ? "non-negative" : "positive") + " finite scale; the checkpoint is damaged");
    }
    scales[std::size_t(e)] = value;
  }
  return scales;
}

// The fused experts' codes and block scales of one projection, checked against [E, N, K].
struct FusedProjection {
  TensorView codes, scales;
  std::vector<float> global_gate, global_up;  // equal unless the global scale is [E, 2]
  std::vector<float> input;                   // empty when the checkpoint has no input_scale
};

FusedProjection load_fused(const Checkpoint& checkpoint, const std::string& base, std::int64_t experts, std::int64_t rows,
                           std::int64_t cols, bool gate_up, bool check_block_scales) {
  FusedProjection projection;
  projection.codes = require(checkpoint, moe_names::fused_weight(checkpoint, base), base, "the fused experts' codes");
  const std::string scale_name = base + "_weight_scale";
  projection.scales = require(checkpoint, moe_names::fused_companion(checkpoint, base, "weight_scale"), scale_name,
                              "the fused experts' E4M3 block scales");
  const std::vector<std::int64_t> scale_shape{experts, rows, cols / scale_layout::kBlock};
  if (projection.scales.dtype() != TensorDType::f8_e4m3 || projection.scales.shape() != scale_shape) {
    bad_tensor(projection.scales, std::string("is ") + to_string(projection.scales.dtype()) + " " + projection.scales.entry->shape_string() +
                                      ", but its codes need F8_E4M3 [" + std::to_string(experts) + ", " + std::to_string(rows) + ", " +
                                      std::to_string(cols / scale_layout::kBlock) + "]");
  }
  if (check_block_scales) check_block_scale_bytes(projection.scales, scale_shape[2]);
  const TensorView global = require(checkpoint, moe_names::fused_companion(checkpoint, base, "weight_scale_2"),
                                    base + "_weight_scale_2", "the per-expert global scales");
  projection.global_gate = per_expert_scales(global, experts, gate_up ? 1 : 0, true);
  projection.global_up = gate_up ? per_expert_scales(global, experts, 2, true) : projection.global_gate;
  if (const auto input = moe_names::fused_companion(checkpoint, base, "input_scale"))
    projection.input = per_expert_scales(*input, experts, gate_up ? -1 : 0, false);
  return projection;
}

// Rows [first, first + rows) of expert e of a fused [E, N, K] projection.
Nvfp4View fused_view(const FusedProjection& projection, std::int64_t e, std::int64_t expert_rows, std::int64_t first,
                     std::int64_t rows, std::int64_t cols, float global_scale) {
  const std::int64_t code_row = cols / 2, scale_row = cols / scale_layout::kBlock;
  const std::int64_t row = e * expert_rows + first;
  return {projection.codes.data + row * code_row, projection.scales.data + row * scale_row, ScaleLayout::linear, global_scale,
          rows, cols, Memory::host, 0, rows * code_row, rows * scale_row};
}

std::vector<moe::ExpertProjections> load_fused_experts(const Checkpoint& checkpoint, const MoeLayerShape& shape, bool check) {
  const std::int64_t experts = shape.experts, hidden = shape.hidden, inter = shape.intermediate;
  const FusedProjection gate_up =
      load_fused(checkpoint, moe_names::fused(shape.prefix, "gate_up_proj"), experts, 2 * inter, hidden, true, check);
  const FusedProjection down = load_fused(checkpoint, moe_names::fused(shape.prefix, "down_proj"), experts, hidden, inter, false, check);
  std::vector<moe::ExpertProjections> result(static_cast<std::size_t>(experts));
  for (std::int64_t e = 0; e < experts; ++e) {
    moe::ExpertProjections& expert = result[std::size_t(e)];
    expert.gate = fused_view(gate_up, e, 2 * inter, 0, inter, hidden, gate_up.global_gate[std::size_t(e)]);
    expert.up = fused_view(gate_up, e, 2 * inter, inter, inter, hidden, gate_up.global_up[std::size_t(e)]);
    expert.down = fused_view(down, e, hidden, 0, hidden, inter, down.global_gate[std::size_t(e)]);
    expert.gate_up_input_scale = gate_up.input.empty() ? 0.0f : gate_up.input[std::size_t(e)];
    expert.down_input_scale = down.input.empty() ? 0.0f : down.input[std::size_t(e)];
  }
  return result;
}

moe::ExpertProjections load_projections(const Checkpoint& checkpoint, const std::string& gate, const std::string& up,
                                        const std::string& down, bool check) {
  const Nvfp4Layer gate_layer = load_nvfp4_layer(checkpoint, gate, check);
  const Nvfp4Layer up_layer = load_nvfp4_layer(checkpoint, up, check);
  const Nvfp4Layer down_layer = load_nvfp4_layer(checkpoint, down, check);
  moe::ExpertProjections projections{gate_layer.view(), up_layer.view(), down_layer.view()};
  projections.gate_up_input_scale = larger_input_scale(gate_layer.input_scale, up_layer.input_scale);
  projections.down_input_scale = down_layer.input_scale.value_or(0.0f);
  return projections;
}

}  // namespace

DenseView MoeLayerTensors::DenseCopy::view() const {
  const void* data = dtype == DType::f32 ? static_cast<const void*>(f32.data()) : static_cast<const void*>(half.data());
  return {data, dtype, rows, cols, 0, Memory::host, 0, rows * cols * std::int64_t(dtype == DType::f32 ? 4 : 2)};
}

moe::MoeWeights MoeLayerTensors::weights() const {
  moe::MoeWeights weights;
  weights.experts = experts_;
  weights.layout = shape.layout;
  if (router_) weights.router = router_->view();
  if (has_shared_) {
    moe::SharedExpert shared;
    shared.nvfp4 = shared_nvfp4_;
    if (shared_gate_proj_) {
      shared.dense_gate = shared_gate_proj_->view();
      shared.dense_up = shared_up_proj_->view();
      shared.dense_down = shared_down_proj_->view();
    }
    if (shared_gate_) shared.gate = shared_gate_->view();
    weights.shared = shared;
  }
  return weights;
}

std::int64_t MoeLayerTensors::expert_bytes() const {
  std::int64_t bytes = 0;
  for (const moe::ExpertProjections& expert : experts_)
    for (const Nvfp4View* view : {&expert.gate, &expert.up, &expert.down}) bytes += view->codes_size_bytes + view->scales_size_bytes;
  return bytes;
}

MoeLayerTensors load_moe_layer(const Checkpoint& checkpoint, const std::string& prefix, bool check_block_scales) {
  MoeLayerTensors layer;
  layer.shape = describe_moe_layer(checkpoint, prefix);
  layer.routing = read_moe_routing_config(checkpoint.directory());
  const MoeLayerShape& shape = layer.shape;
  if (shape.layout == moe::ExpertLayout::fused_gate_up) {
    layer.experts_ = load_fused_experts(checkpoint, shape, check_block_scales);
  } else {
    for (std::int64_t e = 0; e < shape.experts; ++e) {
      layer.experts_.push_back(load_projections(checkpoint, moe_names::expert(prefix, e, "gate_proj"),
                                                moe_names::expert(prefix, e, "up_proj"), moe_names::expert(prefix, e, "down_proj"),
                                                check_block_scales));
    }
  }
  if (const auto router = checkpoint.find(moe_names::router(prefix)))
    layer.router_ = dense_copy<MoeLayerTensors::DenseCopy>(*router, shape.experts, shape.hidden);

  const std::string shared = moe_names::shared_module(checkpoint, prefix);
  if (!shared.empty()) {
    layer.has_shared_ = true;
    const std::int64_t inter = shape.shared_intermediate, hidden = shape.hidden;
    if (shape.shared == "nvfp4") {
      layer.shared_nvfp4_ = load_projections(checkpoint, shared + ".gate_proj", shared + ".up_proj", shared + ".down_proj", check_block_scales);
      const moe::ExpertProjections& projections = *layer.shared_nvfp4_;
      for (const auto& [view, rows, cols, name] : {std::tuple{&projections.gate, inter, hidden, ".gate_proj"},
                                                   std::tuple{&projections.up, inter, hidden, ".up_proj"},
                                                   std::tuple{&projections.down, hidden, inter, ".down_proj"}}) {
        if (view->rows != rows || view->cols != cols) {
          throw_io(checkpoint.description() + ": " + shared + name + " is [" + std::to_string(view->rows) + ", " +
                   std::to_string(view->cols) + "], but a shared expert of hidden size " + std::to_string(hidden) +
                   " and intermediate " + std::to_string(inter) + " needs [" + std::to_string(rows) + ", " + std::to_string(cols) + "]");
        }
      }
    } else {
      using Copy = MoeLayerTensors::DenseCopy;
      layer.shared_gate_proj_ = dense_copy<Copy>(checkpoint.get(shared + ".gate_proj.weight"), inter, hidden);
      layer.shared_up_proj_ = dense_copy<Copy>(checkpoint.get(shared + ".up_proj.weight"), inter, hidden);
      layer.shared_down_proj_ = dense_copy<Copy>(checkpoint.get(shared + ".down_proj.weight"), hidden, inter);
    }
  }
  if (const auto gate = checkpoint.find(moe_names::shared_gate(prefix))) {
    if (!layer.has_shared_) {
      throw_io(checkpoint.description() + ": has " + gate->name() + " but no shared expert (" + prefix +
               ".shared_expert.{gate_proj,up_proj,down_proj}); the checkpoint is incomplete");
    }
    layer.shared_gate_ = dense_copy<MoeLayerTensors::DenseCopy>(*gate, 1, shape.hidden);
  }
  return layer;
}

}  // namespace fp4gemm::io
