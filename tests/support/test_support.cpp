#include "support/test_support.hpp"

#include <chrono>
#include <cmath>
#include <cstring>
#include <sstream>

#include "backends/ref/ref_backend.hpp"
#include "fp4gemm/format/half.hpp"

namespace fp4gemm::testing {

std::uint64_t fresh_seed() {
  static std::mt19937_64 seeder(std::uint64_t(std::chrono::high_resolution_clock::now().time_since_epoch().count()));
  return seeder();
}

std::vector<float> random_values(std::int64_t count, std::mt19937_64& rng) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<float> exponent(-4.0f, 4.0f);
  std::uniform_int_distribution<int> zero(0, 63);
  std::vector<float> values(static_cast<std::size_t>(count));
  for (std::int64_t i = 0; i < count; ++i) {
    // Every 16-element block gets its own magnitude, so block scales span a wide range.
    static thread_local float block_magnitude = 1.0f;
    if (i % 16 == 0) block_magnitude = std::exp2(exponent(rng));
    values[std::size_t(i)] = zero(rng) == 0 ? 0.0f : normal(rng) * block_magnitude;
  }
  return values;
}

std::string GemmCase::to_string() const {
  std::ostringstream text;
  text << "m=" << m << " n=" << n << " k=" << k << " a=" << fp4gemm::to_string(activation)
       << " out=" << fp4gemm::to_string(output);
  return text.str();
}

ActivationView GemmOperands::activation() const {
  switch (type) {
    case ActivationType::bf16: return ActivationView::from_dense({activation_bf16.data(), DType::bf16, m, k});
    case ActivationType::nvfp4: return ActivationView::from_nvfp4(activation_nvfp4.view());
    case ActivationType::f32: break;
  }
  return ActivationView::from_dense({activation_f32.data(), DType::f32, m, k});
}

GemmOperands make_operands(const GemmCase& c, std::mt19937_64& rng) {
  GemmOperands operands;
  operands.type = c.activation;
  operands.m = c.m;
  operands.k = c.k;
  const std::vector<float> weight = random_values(c.n * c.k, rng);
  operands.weight = quantize_weight(weight.data(), c.n, c.k);
  operands.activation_f32 = random_values(c.m * c.k, rng);
  const DenseView dense{operands.activation_f32.data(), DType::f32, c.m, c.k};
  float input_scale = 1.0f;
  if (c.activation == ActivationType::bf16) {
    for (float value : operands.activation_f32) operands.activation_bf16.push_back(float_to_bf16(value));
  } else if (c.activation == ActivationType::nvfp4) {
    input_scale = activation_global_scale(dense);
    operands.activation_nvfp4 = quantize_activation(dense, input_scale);
  }
  // alpha as a deployment computes it (weight_scale_2, times input_scale for W4A4), times 1.5 so
  // that a backend ignoring alpha cannot pass.
  operands.alpha = operands.weight.global_scale * input_scale * 1.5f;
  if (operands.alpha == 0.0f) operands.alpha = 1.5f;
  return operands;
}

PoisonedOutput make_poisoned_output(std::int64_t m, std::int64_t n, DType dtype) {
  PoisonedOutput out;
  const std::size_t element = dtype_size(dtype);
  out.bytes.assign(static_cast<std::size_t>(m * n) * element + 64, 0);
  // 0xFF bytes: a NaN in FP32, BF16 and FP16 alike.
  std::memset(out.bytes.data(), 0xFF, out.bytes.size());
  out.view = {out.bytes.data(), dtype, m, n, 0, Memory::host, 0};
  return out;
}

float PoisonedOutput::at(std::int64_t row, std::int64_t col) const {
  const std::int64_t index = row * view.stride() + col;
  switch (view.dtype) {
    case DType::f32: { float value; std::memcpy(&value, bytes.data() + index * 4, 4); return value; }
    case DType::bf16: { std::uint16_t bits; std::memcpy(&bits, bytes.data() + index * 2, 2); return bf16_to_float(bits); }
    case DType::f16: { std::uint16_t bits; std::memcpy(&bits, bytes.data() + index * 2, 2); return fp16_to_float(bits); }
  }
  return NAN;
}

std::vector<float> read_output(const PoisonedOutput& out) {
  std::vector<float> values(static_cast<std::size_t>(out.view.rows * out.view.cols));
  for (std::int64_t row = 0; row < out.view.rows; ++row)
    for (std::int64_t col = 0; col < out.view.cols; ++col) values[std::size_t(row * out.view.cols + col)] = out.at(row, col);
  return values;
}

std::string compare_with_reference(const GemmOperands& operands, const std::vector<float>& out, std::int64_t m,
                                   std::int64_t n, DType output, double relative_tolerance) {
  const ReferenceResult reference = reference_gemm(operands.activation(), operands.weight.view(), operands.alpha);
  // One unit in the last place of the output type, relative: 2^-8 for BF16, 2^-11 for FP16.
  const double output_rounding = output == DType::bf16 ? std::ldexp(1.0, -8) : output == DType::f16 ? std::ldexp(1.0, -11) : 0.0;
  std::ostringstream failures;
  int reported = 0;
  std::int64_t failed = 0;
  for (std::int64_t i = 0; i < m * n; ++i) {
    const double expected = reference.values[std::size_t(i)];
    const double actual = out[std::size_t(i)];
    const double tolerance = relative_tolerance * reference.absolute_sum[std::size_t(i)] + output_rounding * std::fabs(expected) +
                             1e-30;
    if (!(std::fabs(actual - expected) <= tolerance)) {  // NaN fails here
      ++failed;
      if (reported++ < 5) {
        failures << "  [" << i / n << ", " << i % n << "] got " << actual << ", expected " << expected
                 << " (tolerance " << tolerance << ")\n";
      }
    }
  }
  if (failed == 0) return "";
  return std::to_string(failed) + " of " + std::to_string(m * n) + " elements out of tolerance:\n" + failures.str();
}

}  // namespace fp4gemm::testing
