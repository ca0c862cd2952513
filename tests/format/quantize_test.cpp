// The ModelOpt weight recipe and the runtime activation convention on hand-computed cases.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>

#include "fp4gemm/error.hpp"
#include "fp4gemm/format/e2m1.hpp"
#include "fp4gemm/format/e4m3.hpp"
#include "fp4gemm/format/half.hpp"
#include "fp4gemm/format/nvfp4_matrix.hpp"

namespace fp4gemm {
namespace {

std::vector<std::uint8_t> codes_of_row(const Nvfp4Matrix& matrix, std::int64_t row) {
  std::vector<std::uint8_t> codes;
  for (std::int64_t col = 0; col < matrix.cols; ++col)
    codes.push_back(e2m1::unpack(matrix.codes.data() + row * matrix.cols / 2, col));
  return codes;
}

TEST(QuantizeWeight, TiesSaturationAndScalesFollowTheRecipe) {
  // amax = 6*448 makes scale_2 exactly 1 and the first block's scale exactly 448,
  // so x = W / 448 lands on the listed multiples of 448.
  const float u = 448.0f;
  std::vector<float> row = {6 * u,    0.25f * u, 0.75f * u, 1.25f * u, 1.75f * u, 2.5f * u, 3.5f * u, 5 * u,
                            -6 * u,   -0.25f * u, -0.75f * u, 0.0f,     -0.0f,     0.5f * u, 1.5f * u, 3 * u};
  const Nvfp4Matrix q = quantize_weight(row.data(), 1, 16);
  EXPECT_EQ(q.global_scale, 1.0f);
  EXPECT_EQ(q.scales[0], 0x7E);  // 448
  const std::vector<std::uint8_t> expected = {7, 0, 2, 2, 4, 4, 6, 6, 15, 8, 10, 0, 0, 1, 3, 5};
  EXPECT_EQ(codes_of_row(q, 0), expected);
}

TEST(QuantizeWeight, ZeroBlockGetsScaleOneAndZeroCodes) {
  std::vector<float> row(32, 0.0f);
  for (int i = 0; i < 16; ++i) row[i] = float(i - 8);
  const Nvfp4Matrix q = quantize_weight(row.data(), 1, 32);
  EXPECT_EQ(q.scales[1], e4m3::encode(1.0f));
  for (int i = 16; i < 32; ++i) EXPECT_EQ(e2m1::unpack(q.codes.data(), i), 0);
}

TEST(QuantizeWeight, SubnormalAndClampedBlockScales) {
  // Block 0 sets amax = 6*448 (scale_2 = 1). Block 1's amax 6*2^-8 gives s = 2^-8, an E4M3
  // subnormal (code 2). Block 2's amax 6*2^-11 gives s = 2^-11, clamped up to 2^-9 (code 1), so
  // its largest element becomes 6*2^-11 / 2^-9 = 1.5 (code 3) and the block keeps its value.
  std::vector<float> row(48, 0.0f);
  row[0] = 6 * 448.0f;
  row[16] = 6 * std::ldexp(1.0f, -8);
  row[17] = -3 * std::ldexp(1.0f, -8);
  row[32] = 6 * std::ldexp(1.0f, -11);
  const Nvfp4Matrix q = quantize_weight(row.data(), 1, 48);
  EXPECT_EQ(q.scales[1], 0x02);
  EXPECT_EQ(e2m1::unpack(q.codes.data(), 16), 7);
  EXPECT_EQ(e2m1::unpack(q.codes.data(), 17), 13);
  EXPECT_EQ(q.scales[2], 0x01);
  EXPECT_EQ(e2m1::unpack(q.codes.data(), 32), 3);
  const std::vector<float> values = q.dequantize();
  EXPECT_EQ(values[16], row[16]);
  EXPECT_EQ(values[17], row[17]);
  EXPECT_EQ(values[32], row[32]) << "a clamped block keeps its values";
}

TEST(QuantizeWeight, AllZeroWeightIsValid) {
  std::vector<float> zeros(64, 0.0f);
  const Nvfp4Matrix q = quantize_weight(zeros.data(), 2, 32);
  EXPECT_EQ(q.global_scale, 0.0f);
  for (float value : q.dequantize()) EXPECT_EQ(value, 0.0f);
}

TEST(QuantizeWeight, DequantizedBlockValuesAreExactInBf16AndCloseToInput) {
  std::mt19937 rng(1);
  std::normal_distribution<float> normal;
  std::vector<float> weight(64 * 256);
  for (auto& value : weight) value = normal(rng);
  const Nvfp4Matrix q = quantize_weight(weight.data(), 64, 256);
  const std::vector<float> unscaled = q.dequantize(false);
  for (float value : unscaled) ASSERT_EQ(bf16_to_float(float_to_bf16(value)), value);
  // FP4 with per-16 scales: relative RMS error around 10%; a broken recipe is far off.
  const std::vector<float> values = q.dequantize();
  double error = 0, norm = 0;
  for (std::size_t i = 0; i < weight.size(); ++i) {
    error += std::pow(values[i] - weight[i], 2);
    norm += std::pow(weight[i], 2);
  }
  EXPECT_LT(std::sqrt(error / norm), 0.15);
}

TEST(QuantizeWeight, AcceptsBf16AndFp16AndRejectsBadInput) {
  std::vector<std::uint16_t> bf16(32), fp16(32);
  std::vector<float> f32(32);
  for (int i = 0; i < 32; ++i) {
    f32[i] = float(i) - 10.5f;
    bf16[i] = float_to_bf16(f32[i]);
    fp16[i] = float_to_fp16(f32[i]);
  }
  const Nvfp4Matrix from_f32 = quantize_weight(f32.data(), 1, 32);
  EXPECT_EQ(quantize_weight(DenseView{bf16.data(), DType::bf16, 1, 32}).codes, from_f32.codes);
  EXPECT_EQ(quantize_weight(DenseView{fp16.data(), DType::f16, 1, 32}).codes, from_f32.codes);

  EXPECT_THROW(quantize_weight(f32.data(), 1, 24), Error);  // K not a multiple of 16
  EXPECT_THROW(quantize_weight(f32.data(), -1, 16), Error);
  f32[3] = std::nanf("");
  EXPECT_THROW(quantize_weight(f32.data(), 1, 32), Error);
  f32[3] = INFINITY;
  EXPECT_THROW(quantize_weight(f32.data(), 1, 32), Error);
}

// From 2^20 elements the conversion and quantization run on all threads: the result must not
// depend on their number, and the error must name the first non-finite value in row-major order.
TEST(QuantizeWeight, ALargeWeightIsTheSameOnOneThreadAndOnSeveralAndNamesItsFirstNonFiniteValue) {
  constexpr std::int64_t kRows = 512, kCols = 2048;  // 2^20 elements: the parallel path
  std::mt19937 rng(5);
  std::normal_distribution<float> normal;
  std::vector<float> values(std::size_t(kRows * kCols));
  for (float& value : values) value = normal(rng);
  const int threads = omp_get_max_threads();
  omp_set_num_threads(1);
  const Nvfp4Matrix serial = quantize_weight(values.data(), kRows, kCols);
  omp_set_num_threads(std::max(threads, 3));
  const Nvfp4Matrix parallel = quantize_weight(values.data(), kRows, kCols);
  EXPECT_EQ(parallel.codes, serial.codes);
  EXPECT_EQ(parallel.scales, serial.scales);
  EXPECT_EQ(parallel.global_scale, serial.global_scale);

  values[std::size_t(300 * kCols + 1)] = INFINITY;
  values[std::size_t(5 * kCols + 7)] = std::nanf("");
  std::string message;
  try {
    quantize_weight(values.data(), kRows, kCols);
  } catch (const Error& error) {
    message = error.what();
  }
  omp_set_num_threads(threads);
  EXPECT_NE(message.find("non-finite value at [5, 7]"), std::string::npos) << message;
}

TEST(QuantizeActivation, FollowsTheRuntimeConvention) {
  // input_scale 1: g = 1; block amax 6 gives sf = 1 exactly, so codes are plain E2M1 roundings.
  std::vector<float> row = {6, 0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5, -6, -0.25f, 0, 0.5f, 1.5f, 3, 4, 2};
  const Nvfp4Matrix q = quantize_activation(DenseView{row.data(), DType::f32, 1, 16}, 1.0f);
  EXPECT_EQ(q.scales[0], e4m3::encode(1.0f));
  EXPECT_EQ(q.global_scale, 1.0f);
  for (int i = 0; i < 16; ++i) EXPECT_EQ(e2m1::unpack(q.codes.data(), i), e2m1::encode(row[i])) << i;

  // input_scale = amax/2688: the block scale is amax/6 * 2688/amax = 448 -> saturates within range.
  std::vector<float> scaled(16);
  for (int i = 0; i < 16; ++i) scaled[i] = row[i] * 0.01f;
  const DenseView view{scaled.data(), DType::f32, 1, 16};
  const float input_scale = activation_global_scale(view);
  const Nvfp4Matrix q2 = quantize_activation(view, input_scale);
  const std::vector<float> back = q2.dequantize();
  for (int i = 0; i < 16; ++i) EXPECT_NEAR(back[i], scaled[i], 1.01f * 0.01f) << i;  // half the widest E2M1 step (4 -> 6)
  EXPECT_THROW(quantize_activation(view, 0.0f), Error);
}

TEST(ValidateNvfp4, RejectsNanScalesAndBadShapes) {
  std::vector<float> weight(32, 1.0f);
  Nvfp4Matrix q = quantize_weight(weight.data(), 1, 32);
  EXPECT_NO_THROW(validate_nvfp4(q.view(), "weight"));
  q.scales[1] = 0x7F;
  EXPECT_THROW(validate_nvfp4(q.view(), "weight"), Error);
  q.scales[1] = 0xFF;
  EXPECT_THROW(validate_nvfp4(q.view(), "weight"), Error);
  Nvfp4View bad = q.view();
  bad.cols = 24;
  EXPECT_THROW(validate_nvfp4(bad, "weight"), Error);
  bad = q.view();
  bad.codes = nullptr;
  EXPECT_THROW(validate_nvfp4(bad, "weight"), Error);
}

}  // namespace
}  // namespace fp4gemm
