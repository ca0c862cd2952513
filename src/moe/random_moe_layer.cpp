#include "moe/random_moe_layer.hpp"

#include <cmath>

#include "fp4gemm/format/half.hpp"

namespace fp4gemm::moe {
namespace {

// O(1) / sqrt(fan_in) values so that x · gateᵀ is O(1) and SiLU is used across its curve, with
// a spread of 16-element block magnitudes (distinct block scales) and about one exact zero in 32.
std::vector<float> random_matrix(std::int64_t rows, std::int64_t cols, std::mt19937_64& rng) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<float> exponent(-2.0f, 2.0f);
  std::uniform_int_distribution<int> zero(0, 31);
  const float fan_in = 1.0f / std::sqrt(float(cols));
  std::vector<float> values(static_cast<std::size_t>(rows * cols));
  float block_magnitude = 1.0f;
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i % 16 == 0) block_magnitude = std::exp2(exponent(rng)) * fan_in;
    values[i] = zero(rng) == 0 ? 0.0f : normal(rng) * block_magnitude;
  }
  return values;
}

// input_scale as a calibration would set it for values of about this largest magnitude.
float input_scale_for(float amax, std::mt19937_64& rng) {
  std::uniform_real_distribution<float> spread(0.75f, 1.5f);
  return amax * spread(rng) / (6.0f * 448.0f);
}

Nvfp4View slice_rows(const Nvfp4View& view, std::int64_t first_row, std::int64_t rows) {
  Nvfp4View slice = view;
  slice.codes = view.codes + first_row * (view.cols / 2);
  slice.scales = view.scales + first_row * (view.cols / 16);
  slice.rows = rows;
  slice.codes_size_bytes = 0;
  slice.scales_size_bytes = 0;
  return slice;
}

class Builder {
 public:
  Builder(RandomMoeLayer& layer, const RandomMoeSpec& spec, std::mt19937_64& rng) : layer_(layer), spec_(spec), rng_(rng) {}

  Nvfp4View nvfp4(std::int64_t rows, std::int64_t cols) {
    const std::vector<float> values = random_matrix(rows, cols, rng_);
    layer_.matrices.push_back(quantize_weight(values.data(), rows, cols));
    return layer_.matrices.back().view();
  }

  DenseView dense(std::int64_t rows, std::int64_t cols) {
    std::vector<float> values = random_matrix(rows, cols, rng_);
    if (spec_.dense_dtype == DType::bf16) {
      std::vector<std::uint16_t> bits;
      for (float value : values) bits.push_back(float_to_bf16(value));
      layer_.dense_bf16.push_back(std::move(bits));
      return {layer_.dense_bf16.back().data(), DType::bf16, rows, cols, 0, Memory::host, 0};
    }
    layer_.dense_f32.push_back(std::move(values));
    return {layer_.dense_f32.back().data(), DType::f32, rows, cols, 0, Memory::host, 0};
  }

  void input_scales(ExpertProjections& projections) {
    if (!spec_.input_scales) return;
    projections.gate_up_input_scale = input_scale_for(4.0f, rng_);  // |x| reaches ~4
    projections.down_input_scale = input_scale_for(8.0f, rng_);     // |h| reaches ~8
  }

  ExpertProjections separate_expert(std::int64_t intermediate) {
    ExpertProjections projections;
    projections.gate = nvfp4(intermediate, spec_.hidden);
    projections.up = nvfp4(intermediate, spec_.hidden);
    projections.down = nvfp4(spec_.hidden, intermediate);
    input_scales(projections);
    return projections;
  }

  // Every expert's gate_up [2I, H] quantized on its own (one weight_scale_2 per expert, as ModelOpt
  // writes fused experts), stored one after another in one buffer; gate and up are views into it.
  void fused_experts() {
    const std::int64_t experts = spec_.experts, hidden = spec_.hidden, intermediate = spec_.intermediate;
    std::vector<float> gate_up_scale(static_cast<std::size_t>(experts)), down_scale(gate_up_scale.size());
    for (std::int64_t e = 0; e < experts; ++e) {
      const std::vector<float> gate_up = random_matrix(2 * intermediate, hidden, rng_);
      const Nvfp4Matrix gate_up_matrix = quantize_weight(gate_up.data(), 2 * intermediate, hidden);
      append(layer_.gate_up_codes, layer_.gate_up_scales, gate_up_matrix);
      gate_up_scale[std::size_t(e)] = gate_up_matrix.global_scale;
      const std::vector<float> down = random_matrix(hidden, intermediate, rng_);
      const Nvfp4Matrix down_matrix = quantize_weight(down.data(), hidden, intermediate);
      append(layer_.down_codes, layer_.down_scales, down_matrix);
      down_scale[std::size_t(e)] = down_matrix.global_scale;
    }
    const Nvfp4View gate_up_all{layer_.gate_up_codes.data(), layer_.gate_up_scales.data(), ScaleLayout::linear, 1.0f,
                                experts * 2 * intermediate, hidden, Memory::host, 0};
    const Nvfp4View down_all{layer_.down_codes.data(), layer_.down_scales.data(), ScaleLayout::linear, 1.0f,
                             experts * hidden, intermediate, Memory::host, 0};
    for (std::int64_t e = 0; e < experts; ++e) {
      ExpertProjections projections;
      projections.gate = slice_rows(gate_up_all, e * 2 * intermediate, intermediate);
      projections.up = slice_rows(gate_up_all, e * 2 * intermediate + intermediate, intermediate);
      projections.gate.global_scale = projections.up.global_scale = gate_up_scale[std::size_t(e)];
      projections.down = slice_rows(down_all, e * hidden, hidden);
      projections.down.global_scale = down_scale[std::size_t(e)];
      input_scales(projections);
      layer_.weights.experts.push_back(projections);
    }
  }

 private:
  static void append(std::vector<std::uint8_t>& codes, std::vector<std::uint8_t>& scales, const Nvfp4Matrix& matrix) {
    codes.insert(codes.end(), matrix.codes.begin(), matrix.codes.end());
    scales.insert(scales.end(), matrix.scales.begin(), matrix.scales.end());
  }

  RandomMoeLayer& layer_;
  const RandomMoeSpec& spec_;
  std::mt19937_64& rng_;
};

}  // namespace

RandomMoeLayer make_random_moe_layer(const RandomMoeSpec& spec, std::mt19937_64& rng) {
  RandomMoeLayer layer;
  // NOTE: views point into these vectors' elements; reserving keeps push_back from moving them.
  layer.matrices.reserve(static_cast<std::size_t>(3 * spec.experts + 3));
  layer.dense_f32.reserve(5);
  layer.dense_bf16.reserve(5);
  Builder builder(layer, spec, rng);
  layer.weights.layout = spec.layout;
  if (spec.layout == ExpertLayout::fused_gate_up) {
    builder.fused_experts();
  } else {
    for (std::int64_t e = 0; e < spec.experts; ++e) layer.weights.experts.push_back(builder.separate_expert(spec.intermediate));
  }
  if (spec.router) layer.weights.router = builder.dense(spec.experts, spec.hidden);
  if (spec.shared != SharedKind::none) {
    SharedExpert shared;
    if (spec.shared == SharedKind::nvfp4) {
      shared.nvfp4 = builder.separate_expert(spec.shared_intermediate);
    } else {
      shared.dense_gate = builder.dense(spec.shared_intermediate, spec.hidden);
      shared.dense_up = builder.dense(spec.shared_intermediate, spec.hidden);
      shared.dense_down = builder.dense(spec.hidden, spec.shared_intermediate);
    }
    if (spec.shared_gate) shared.gate = builder.dense(1, spec.hidden);
    layer.weights.shared = shared;
  }
  return layer;
}

DenseView RandomHiddenStates::view() const {
  if (dtype == DType::bf16) return {bf16.data(), DType::bf16, tokens, hidden, 0, Memory::host, 0};
  return {f32.data(), DType::f32, tokens, hidden, 0, Memory::host, 0};
}

RandomHiddenStates make_random_hidden_states(std::int64_t tokens, std::int64_t hidden, DType dtype, std::mt19937_64& rng) {
  RandomHiddenStates states;
  states.tokens = tokens;
  states.hidden = hidden;
  states.dtype = dtype;
  states.f32 = random_matrix(tokens, hidden, rng);
  // random_matrix scales by 1/sqrt(cols); hidden states are O(1).
  const float unscale = std::sqrt(float(hidden));
  for (float& value : states.f32) value *= unscale;
  if (dtype == DType::bf16) {
    for (float& value : states.f32) {
      states.bf16.push_back(float_to_bf16(value));
      value = bf16_to_float(states.bf16.back());
    }
  }
  return states;
}

}  // namespace fp4gemm::moe
