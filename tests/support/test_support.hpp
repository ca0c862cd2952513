#pragma once
// Shared by every backend test: fresh random operands, poisoned outputs, and a comparison of
// every output element against the `ref` oracle.
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "fp4gemm/backend.hpp"
#include "fp4gemm/format/nvfp4_matrix.hpp"

namespace fp4gemm::testing {

// A new seed for every call (fresh inputs each run), printed on failure so a run can be replayed.
std::uint64_t fresh_seed();

// Random FP32 values with a spread of magnitudes (so block scales differ) and some exact zeros.
std::vector<float> random_values(std::int64_t count, std::mt19937_64& rng);

struct GemmCase {
  std::int64_t m, n, k;
  ActivationType activation;
  DType output;
  std::string to_string() const;
};

// Host operands of one case: a quantized weight, an activation in the requested type, alpha.
struct GemmOperands {
  ActivationType type = ActivationType::f32;
  std::int64_t m = 0, k = 0;
  Nvfp4Matrix weight;
  std::vector<float> activation_f32;        // [m, k]
  std::vector<std::uint16_t> activation_bf16;
  Nvfp4Matrix activation_nvfp4;
  float alpha = 1.0f;
  ActivationView activation() const;
};
GemmOperands make_operands(const GemmCase& c, std::mt19937_64& rng);

// Output buffer filled with a poison pattern (NaN for floats) so unwritten elements are caught.
struct PoisonedOutput {
  std::vector<std::uint8_t> bytes;
  MutableDenseView view;
  float at(std::int64_t row, std::int64_t col) const;
};
PoisonedOutput make_poisoned_output(std::int64_t m, std::int64_t n, DType dtype);

// Every element within tolerance of the reference; NaN never passes. Returns "" when all pass,
// else a description of the first mismatches. For FP32 output: |out - ref| <= rel * sum|a*w|;
// for BF16/FP16 output: additionally one unit of the output's rounding.
std::string compare_with_reference(const GemmOperands& operands, const std::vector<float>& out, std::int64_t m,
                                   std::int64_t n, DType output, double relative_tolerance);
std::vector<float> read_output(const PoisonedOutput& out);

}  // namespace fp4gemm::testing
