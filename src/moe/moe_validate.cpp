// The checks every MoE backend runs before anything is written: the layer's weights at prepare,
// each call's operands at run. Every failure is an Error(invalid_argument) naming the tensor.
#include <cmath>
#include <string>

#include "core/dense_checks.hpp"
#include "core/host_rows.hpp"
#include "fp4gemm/error.hpp"
#include "fp4gemm/format/nvfp4_matrix.hpp"
#include "fp4gemm/moe/moe_backend.hpp"

namespace fp4gemm::moe {
namespace {

void expect_shape(const std::string& what, std::int64_t rows, std::int64_t cols, std::int64_t want_rows,
                  std::int64_t want_cols) {
  if (rows != want_rows || cols != want_cols) {
    throw_invalid(what + " is " + shape_text(rows, cols) + " but the layer needs " + shape_text(want_rows, want_cols));
  }
}

void check_nvfp4(const Nvfp4View& view, const std::string& what, std::int64_t rows, std::int64_t cols) {
  expect_shape(what, view.rows, view.cols, rows, cols);
  validate_nvfp4(view, what.c_str());
  if (!(view.global_scale >= 0.0f)) throw_invalid(what + ": weight_scale_2 must be finite and not negative");
}

void check_input_scale(float scale, const std::string& what) {
  if (!std::isfinite(scale) || scale < 0.0f) throw_invalid(what + " must be finite and not negative (0 means absent)");
}

void check_projections(const ExpertProjections& projections, const std::string& name, std::int64_t intermediate,
                       std::int64_t hidden) {
  check_nvfp4(projections.gate, name + " gate_proj", intermediate, hidden);
  check_nvfp4(projections.up, name + " up_proj", intermediate, hidden);
  check_nvfp4(projections.down, name + " down_proj", hidden, intermediate);
  check_input_scale(projections.gate_up_input_scale, name + " gate/up input_scale");
  check_input_scale(projections.down_input_scale, name + " down_proj input_scale");
}

bool has_input_scales(const ExpertProjections& projections) {
  return projections.gate_up_input_scale > 0.0f && projections.down_input_scale > 0.0f;
}

// Throws when a host BF16/FP32 view holds NaN or Inf, naming the first one.
void expect_finite(const DenseView& view, const std::string& what, const std::string& consequence) {
  std::vector<float> row_values(static_cast<std::size_t>(view.cols));
  for (std::int64_t row = 0; row < view.rows; ++row) {
    load_activation_row(ActivationView::from_dense(view), row, row_values.data());
    for (std::int64_t col = 0; col < view.cols; ++col) {
      if (!std::isfinite(row_values[std::size_t(col)])) {
        throw_invalid(what + " has a non-finite value at " + shape_text(row, col) + consequence);
      }
    }
  }
}

// A dense weight: present, BF16 or FP32, the shape, and finite when it is on the host.
void check_dense_weight(const DenseView& view, const std::string& what, std::int64_t rows, std::int64_t cols) {
  if (view.data == nullptr) throw_invalid(what + " is missing");
  expect_shape(what, view.rows, view.cols, rows, cols);
  check_dense(view, what.c_str());
  if (view.dtype == DType::f16) throw_invalid(what + ": f16 is not supported; pass bf16 or f32");
  if (view.memory == Memory::host) expect_finite(view, what, "");
}

void check_shared(const SharedExpert& shared, std::int64_t hidden) {
  const std::int64_t intermediate = shared.intermediate();
  if (intermediate <= 0) throw_invalid("shared expert: its intermediate size must be positive (no projections given?)");
  if (shared.nvfp4) {
    check_projections(*shared.nvfp4, "shared expert", intermediate, hidden);
  } else {
    check_dense_weight(shared.dense_gate, "shared expert gate_proj", intermediate, hidden);
    check_dense_weight(shared.dense_up, "shared expert up_proj", intermediate, hidden);
    check_dense_weight(shared.dense_down, "shared expert down_proj", hidden, intermediate);
  }
  if (shared.gate.data != nullptr) check_dense_weight(shared.gate, "shared_expert_gate", 1, hidden);
}

}  // namespace

void validate_moe_weights(const MoeWeights& weights) {
  if (weights.experts.empty()) throw_invalid("the MoE layer has no experts; it needs at least one");
  const std::int64_t hidden = weights.hidden(), intermediate = weights.intermediate();
  if (hidden <= 0 || intermediate <= 0) {
    throw_invalid("expert 0 gate_proj is " + shape_text(intermediate, hidden) + ": hidden and intermediate sizes must be positive");
  }
  for (std::size_t e = 0; e < weights.experts.size(); ++e)
    check_projections(weights.experts[e], "expert " + std::to_string(e), intermediate, hidden);
  if (weights.router.data != nullptr) check_dense_weight(weights.router, "router (gate.weight)", weights.num_experts(), hidden);
  if (weights.shared) check_shared(*weights.shared, hidden);
}

void describe_layer(const MoeWeights& weights, PreparedMoe& layer) {
  layer.experts = weights.num_experts();
  layer.hidden = weights.hidden();
  layer.intermediate = weights.intermediate();
  layer.layout = weights.layout;
  layer.has_router = weights.router.data != nullptr;
  layer.has_shared = weights.shared.has_value();
  layer.shared_intermediate = layer.has_shared ? weights.shared->intermediate() : 0;
  layer.shared_dense = layer.has_shared && !weights.shared->nvfp4;
  bool scales = true;
  for (const auto& expert : weights.experts) scales = scales && has_input_scales(expert);
  if (layer.has_shared && weights.shared->nvfp4) scales = scales && has_input_scales(*weights.shared->nvfp4);
  layer.has_input_scales = scales;
}

MoeProblem validate_moe_call(const MoeCall& call, const PreparedMoe& layer, const MutableDenseView& out,
                             Memory expected_memory) {
  const DenseView& x = call.x;
  check_dense(x, "MoE input x");
  check_dense(out.as_const(), "MoE output");
  if (x.dtype == DType::f16) throw_invalid("MoE input x: f16 is not supported; pass bf16 or f32");
  if (x.cols != layer.hidden) {
    throw_invalid("MoE input x is " + shape_text(x.rows, x.cols) + " but the layer's hidden size is " + std::to_string(layer.hidden));
  }
  if (out.rows != x.rows || out.cols != layer.hidden) {
    throw_invalid("MoE output is " + shape_text(out.rows, out.cols) + " but the layer makes " + shape_text(x.rows, layer.hidden));
  }
  if (x.memory != expected_memory || out.memory != expected_memory) {
    throw_invalid(std::string("MoE input x is in ") + to_string(x.memory) + " memory and the output in " +
                  to_string(out.memory) + " memory; backend '" + layer.backend + "' needs both in " +
                  to_string(expected_memory) + " memory");
  }
  const int k = call.options.top_k;
  if (k < 1 || k > layer.experts) {
    throw_invalid("top_k = " + std::to_string(k) + " is outside [1, " + std::to_string(layer.experts) +
                  "] (the layer has " + std::to_string(layer.experts) + " experts)");
  }
  const bool w4a4 = call.options.activation == ActivationType::nvfp4;
  if (w4a4 && !layer.has_input_scales) {
    throw_invalid("W4A4 (activation nvfp4) needs the input_scale of every expert's gate/up and down projections "
                  "(and of an NVFP4 shared expert); this layer lacks some: run it W4A16 (activation bf16/f32)");
  }

  const RoutingView& routing = call.routing;
  const bool given = routing.topk_ids != nullptr;
  if (!given && routing.topk_weights != nullptr) throw_invalid("top-k weights were given without top-k ids; give both or neither");
  if (given && routing.topk_weights == nullptr) throw_invalid("top-k ids were given without top-k weights; give both or neither");
  if (!given && !layer.has_router) {
    throw_invalid("the layer has no router (gate.weight) and no top-k ids and weights were given: give one of them");
  }
  if (given && routing.memory != expected_memory) {
    throw_invalid(std::string("the top-k ids and weights are in ") + to_string(routing.memory) + " memory; backend '" +
                  layer.backend + "' needs " + to_string(expected_memory) + " memory");
  }
  if (given && routing.memory == Memory::host) {
    for (std::int64_t i = 0; i < x.rows * k; ++i) {
      const std::int32_t id = routing.topk_ids[i];
      if (id < 0 || id >= layer.experts) {
        throw_invalid("top-k id " + std::to_string(id) + " of token " + std::to_string(i / k) + " is outside [0, " +
                      std::to_string(layer.experts) + ")");
      }
      if (!std::isfinite(routing.topk_weights[i])) {
        throw_invalid("top-k weight " + std::to_string(i % k) + " of token " + std::to_string(i / k) + " is not finite");
      }
    }
  }
  if (x.memory == Memory::host) {
    expect_finite(x, "MoE input x", "; NaN or Inf would spread to every expert the token reaches");
  }

  MoeProblem problem;
  problem.tokens = x.rows;
  problem.hidden = layer.hidden;
  problem.intermediate = layer.intermediate;
  problem.experts = layer.experts;
  problem.top_k = k;
  problem.activation = w4a4 ? ActivationType::nvfp4 : (x.dtype == DType::bf16 ? ActivationType::bf16 : ActivationType::f32);
  problem.output = out.dtype;
  problem.routing_given = given;
  problem.shared_expert = layer.has_shared;
  problem.shared_intermediate = layer.shared_intermediate;
  problem.shared_dense = layer.shared_dense;
  return problem;
}

}  // namespace fp4gemm::moe
