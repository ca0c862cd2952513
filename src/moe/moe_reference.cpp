#include "moe/moe_reference.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "core/host_rows.hpp"
#include "fp4gemm/format/half.hpp"
#include "fp4gemm/format/nvfp4_matrix.hpp"
#include "fp4gemm/moe/moe_routing.hpp"

namespace fp4gemm::moe {
namespace {

constexpr std::int64_t kBlock = 16;
// |SiLU'(g)| <= 1.0998 for every g: how far an error in the gate moves SiLU(gate).
constexpr double kSiluSlopeBound = 1.1;
// Float rounding of SiLU, the product and the gate/up scaling in an FP32 backend, relative to |h|.
constexpr double kFp32ElementwiseError = 0x1p-21;
// An unstable NVFP4 block (its scale may round either way) can differ by anything NVFP4 can hold:
// each side decodes within about the block's largest |h|, and scale rounding (subnormal E4M3)
// may double that.
constexpr double kUnstableBlockAllowance = 4.0;

// A projection as exact FP32 values (e2m1 x e4m3, or the dense weight) and its FP64 scale.
struct ExactMatrix {
  std::int64_t rows = 0, cols = 0;
  std::vector<float> values;
  double scale = 1.0;
  const float* row(std::int64_t r) const { return values.data() + r * cols; }
};

ExactMatrix exact(const Nvfp4View& view) {
  ExactMatrix matrix{view.rows, view.cols, std::vector<float>(static_cast<std::size_t>(view.rows * view.cols)),
                     double(view.global_scale)};
  for (std::int64_t r = 0; r < view.rows; ++r) dequantize_row(view, r, matrix.values.data() + r * view.cols, false);
  return matrix;
}

ExactMatrix exact(const DenseView& view) {
  ExactMatrix matrix{view.rows, view.cols, std::vector<float>(static_cast<std::size_t>(view.rows * view.cols)), 1.0};
  for (std::int64_t r = 0; r < view.rows; ++r) load_activation_row(ActivationView::from_dense(view), r, matrix.values.data() + r * view.cols);
  return matrix;
}

struct ExactExpert {
  ExactMatrix gate, up, down;
  float gate_up_input_scale = 0.0f, down_input_scale = 0.0f;  // 0: W16 activations
};

float round_to(DType dtype, double value) {
  const float single = float(value);
  return dtype == DType::bf16 ? bf16_to_float(float_to_bf16(single)) : single;
}

// A row quantized as W4A4 does it, decoded to FP64 with its input_scale applied.
std::vector<double> quantized(const std::vector<float>& row, float input_scale, std::vector<std::uint8_t>* block_scales) {
  const Nvfp4Matrix matrix =
      quantize_activation({row.data(), DType::f32, 1, std::int64_t(row.size()), 0, Memory::host, 0}, input_scale);
  if (block_scales) *block_scales = matrix.scales;
  const std::vector<float> decoded = matrix.dequantize(false);
  std::vector<double> values(decoded.size());
  for (std::size_t i = 0; i < decoded.size(); ++i) values[i] = double(decoded[i]) * double(input_scale);
  return values;
}

// The h a backend feeds the down GEMM, and how far from it a correct backend's may be.
struct Intermediate {
  std::vector<double> values;
  std::vector<double> allowance;
};

// W4A4: quantize h, and per block decide whether every h in the intervals [low, high] quantizes
// to the same block scale; if so each element may move between the codes of its interval ends.
Intermediate quantize_intermediate(const std::vector<float>& rounded, const std::vector<float>& low,
                                   const std::vector<float>& high, float input_scale) {
  const std::size_t count = rounded.size();
  std::vector<float> smallest(count), largest(count);
  for (std::size_t j = 0; j < count; ++j) {
    const bool straddles_zero = low[j] <= 0.0f && high[j] >= 0.0f;
    smallest[j] = straddles_zero ? 0.0f : std::min(std::fabs(low[j]), std::fabs(high[j]));
    largest[j] = std::max(std::fabs(low[j]), std::fabs(high[j]));
  }
  std::vector<std::uint8_t> small_scales, large_scales;
  quantized(smallest, input_scale, &small_scales);
  quantized(largest, input_scale, &large_scales);
  const std::vector<double> low_values = quantized(low, input_scale, nullptr);
  const std::vector<double> high_values = quantized(high, input_scale, nullptr);
  Intermediate h{quantized(rounded, input_scale, nullptr), std::vector<double>(count, 0.0)};
  for (std::size_t block = 0; block < count / kBlock; ++block) {
    const bool stable = small_scales[block] == large_scales[block];
    const double block_largest = *std::max_element(largest.begin() + block * kBlock, largest.begin() + (block + 1) * kBlock);
    for (std::size_t j = block * kBlock; j < (block + 1) * kBlock; ++j) {
      h.allowance[j] = stable ? std::fabs(high_values[j] - low_values[j]) : kUnstableBlockAllowance * block_largest;
    }
  }
  return h;
}

// One expert (or the shared expert) on one token: down(SiLU(gate·a) ⊙ (up·a)) and its tolerance.
struct Contribution {
  std::vector<double> values, tolerance;  // [H]
};

Contribution expert_on_token(const ExactExpert& expert, const std::vector<float>& x, DType x_dtype, bool w4a4,
                             double epsilon) {
  const std::int64_t hidden = expert.gate.cols, intermediate = expert.gate.rows;
  std::vector<double> a(x.begin(), x.end());
  if (w4a4) a = quantized(x, expert.gate_up_input_scale, nullptr);
  std::vector<float> rounded(static_cast<std::size_t>(intermediate)), low(rounded.size()), high(rounded.size());
  for (std::int64_t j = 0; j < intermediate; ++j) {
    double gate = 0.0, gate_magnitude = 0.0, up = 0.0, up_magnitude = 0.0;
    for (std::int64_t i = 0; i < hidden; ++i) {
      const double gate_term = a[std::size_t(i)] * double(expert.gate.row(j)[i]);
      const double up_term = a[std::size_t(i)] * double(expert.up.row(j)[i]);
      gate += gate_term;
      gate_magnitude += std::fabs(gate_term);
      up += up_term;
      up_magnitude += std::fabs(up_term);
    }
    gate *= expert.gate.scale;
    up *= expert.up.scale;
    const double gate_error = epsilon * gate_magnitude * expert.gate.scale;
    const double up_error = epsilon * up_magnitude * expert.up.scale;
    const double silu = gate / (1.0 + std::exp(-gate));
    const double h = silu * up;
    const double h_error = kSiluSlopeBound * gate_error * (std::fabs(up) + up_error) + std::fabs(silu) * up_error +
                           kFp32ElementwiseError * std::fabs(h);
    rounded[std::size_t(j)] = round_to(x_dtype, h);
    low[std::size_t(j)] = round_to(x_dtype, h - h_error);
    high[std::size_t(j)] = round_to(x_dtype, h + h_error);
  }
  Intermediate h;
  if (w4a4) {
    h = quantize_intermediate(rounded, low, high, expert.down_input_scale);
  } else {
    h.values.assign(rounded.begin(), rounded.end());
    for (std::size_t j = 0; j < rounded.size(); ++j) h.allowance.push_back(double(high[j]) - double(low[j]));
  }
  Contribution contribution{std::vector<double>(std::size_t(hidden)), std::vector<double>(std::size_t(hidden))};
  for (std::int64_t c = 0; c < hidden; ++c) {
    double sum = 0.0, magnitude = 0.0, allowed = 0.0;
    for (std::int64_t j = 0; j < intermediate; ++j) {
      const double weight = double(expert.down.row(c)[j]);
      sum += h.values[std::size_t(j)] * weight;
      magnitude += std::fabs(h.values[std::size_t(j)] * weight);
      allowed += h.allowance[std::size_t(j)] * std::fabs(weight);
    }
    contribution.values[std::size_t(c)] = sum * expert.down.scale;
    contribution.tolerance[std::size_t(c)] = (epsilon * magnitude + allowed) * expert.down.scale;
  }
  return contribution;
}

ExactExpert exact_expert(const ExpertProjections& projections) {
  return {exact(projections.gate), exact(projections.up), exact(projections.down), projections.gate_up_input_scale,
          projections.down_input_scale};
}

TopK reference_routing(const MoeWeights& weights, const MoeCall& call, const std::vector<float>& x) {
  const std::int64_t tokens = call.x.rows, hidden = call.x.cols, experts = weights.num_experts();
  const int k = call.options.top_k;
  if (call.routing.topk_ids != nullptr) {
    TopK given{tokens, k, std::vector<std::int32_t>(call.routing.topk_ids, call.routing.topk_ids + tokens * k),
               std::vector<float>(call.routing.topk_weights, call.routing.topk_weights + tokens * k)};
    return given;
  }
  const ExactMatrix router = exact(weights.router);
  std::vector<float> logits(static_cast<std::size_t>(tokens * experts));
  for (std::int64_t t = 0; t < tokens; ++t) {
    for (std::int64_t e = 0; e < experts; ++e) {
      double sum = 0.0;
      for (std::int64_t i = 0; i < hidden; ++i) sum += double(x[std::size_t(t * hidden + i)]) * double(router.row(e)[i]);
      logits[std::size_t(t * experts + e)] = float(sum);
    }
  }
  return route_from_logits(logits.data(), tokens, experts, k, call.options.norm_topk_prob);
}

void accumulate(std::vector<double>& values, std::vector<double>& tolerance, std::int64_t token, double weight,
                double weight_error, const Contribution& contribution) {
  const std::size_t hidden = contribution.values.size();
  for (std::size_t c = 0; c < hidden; ++c) {
    values[token * hidden + c] += weight * contribution.values[c];
    tolerance[token * hidden + c] += std::fabs(weight) * contribution.tolerance[c] + weight_error * std::fabs(contribution.values[c]);
  }
}

}  // namespace

MoeReference reference_moe(const MoeWeights& weights, const MoeCall& call, double epsilon) {
  const std::int64_t tokens = call.x.rows, hidden = call.x.cols;
  const bool w4a4 = call.options.activation == ActivationType::nvfp4;
  std::vector<float> x(static_cast<std::size_t>(tokens * hidden));
  for (std::int64_t t = 0; t < tokens; ++t) load_activation_row(ActivationView::from_dense(call.x), t, x.data() + t * hidden);
  const auto token_row = [&](std::int64_t t) { return std::vector<float>(x.begin() + t * hidden, x.begin() + (t + 1) * hidden); };

  MoeReference reference{std::vector<double>(x.size(), 0.0), std::vector<double>(x.size(), 0.0)};
  const TopK routing = reference_routing(weights, call, x);
  // Expert by expert, so only one expert is decoded at a time.
  for (std::int64_t e = 0; e < weights.num_experts(); ++e) {
    const auto first = std::find(routing.ids.begin(), routing.ids.end(), std::int32_t(e));
    if (first == routing.ids.end()) continue;
    const ExactExpert expert = exact_expert(weights.experts[std::size_t(e)]);
    for (std::size_t i = 0; i < routing.ids.size(); ++i) {
      if (routing.ids[i] != e) continue;
      const std::int64_t token = std::int64_t(i) / routing.k;
      const Contribution contribution = expert_on_token(expert, token_row(token), call.x.dtype, w4a4, epsilon);
      accumulate(reference.values, reference.tolerance, token, routing.weights[i], 0.0, contribution);
    }
  }
  if (weights.shared) {
    const SharedExpert& shared = *weights.shared;
    ExactExpert expert = shared.nvfp4 ? exact_expert(*shared.nvfp4)
                                      : ExactExpert{exact(shared.dense_gate), exact(shared.dense_up), exact(shared.dense_down)};
    const bool shared_w4a4 = w4a4 && shared.nvfp4.has_value();
    const ExactMatrix gate = shared.gate.data ? exact(shared.gate) : ExactMatrix{};
    for (std::int64_t t = 0; t < tokens; ++t) {
      const std::vector<float> row = token_row(t);
      double weight = 1.0, weight_error = 0.0;
      if (shared.gate.data) {
        double logit = 0.0, magnitude = 0.0;
        for (std::int64_t i = 0; i < hidden; ++i) {
          logit += double(row[std::size_t(i)]) * double(gate.values[std::size_t(i)]);
          magnitude += std::fabs(double(row[std::size_t(i)]) * double(gate.values[std::size_t(i)]));
        }
        weight = 1.0 / (1.0 + std::exp(-logit));
        weight_error = 0.25 * epsilon * magnitude;  // sigmoid' <= 1/4
      }
      accumulate(reference.values, reference.tolerance, t, weight, weight_error,
                 expert_on_token(expert, row, call.x.dtype, shared_w4a4, epsilon));
    }
  }
  return reference;
}

std::string compare_with_moe_reference(const MoeReference& reference, const DenseView& out) {
  const double rounding = out.dtype == DType::bf16 ? std::ldexp(1.0, -8) : out.dtype == DType::f16 ? std::ldexp(1.0, -11) : 0.0;
  std::vector<float> row(static_cast<std::size_t>(out.cols));
  std::ostringstream failures;
  std::int64_t failed = 0;
  for (std::int64_t r = 0; r < out.rows; ++r) {
    // Output rows are read as an activation would be: FP32 and BF16 directly, FP16 by hand.
    for (std::int64_t c = 0; c < out.cols; ++c) {
      const std::int64_t index = r * out.stride() + c;
      const auto* bits = static_cast<const std::uint16_t*>(out.data);
      row[std::size_t(c)] = out.dtype == DType::f32 ? static_cast<const float*>(out.data)[index]
                            : out.dtype == DType::bf16 ? bf16_to_float(bits[index])
                                                       : fp16_to_float(bits[index]);
    }
    for (std::int64_t c = 0; c < out.cols; ++c) {
      const std::size_t i = std::size_t(r * out.cols + c);
      const double expected = reference.values[i];
      const double tolerance = reference.tolerance[i] + rounding * std::fabs(expected) + 1e-30;
      if (!(std::fabs(double(row[std::size_t(c)]) - expected) <= tolerance)) {  // NaN fails here
        if (failed++ < 5) {
          failures << "  [" << r << ", " << c << "] got " << row[std::size_t(c)] << ", expected " << expected
                   << " (tolerance " << tolerance << ")\n";
        }
      }
    }
  }
  if (failed == 0) return "";
  return std::to_string(failed) + " of " + std::to_string(out.rows * out.cols) + " output elements out of tolerance:\n" +
         failures.str();
}

}  // namespace fp4gemm::moe
