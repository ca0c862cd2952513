// Both quantizers bit for bit on E2M1 and E4M3 rounding boundaries under global scales that are
// not powers of two. There a division and a multiply by the rounded reciprocal give different
// FP32 results, so these cases pin the order of operations that the recipes prescribe (weights:
// ModelOpt divides; activations: the runtime kernels multiply by reciprocals) and the
// ties-to-even rule of both casts. Every expected code and scale is derived by hand from exact
// arithmetic (the comments say how) or by the integer reference below, never by the code under test.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "fp4gemm/format/e2m1.hpp"
#include "fp4gemm/format/nvfp4_matrix.hpp"

namespace fp4gemm {
namespace {

// --- Exact FP32 reference: one operation on integers, rounded once to nearest even. ---
// Independent of the FPU's rounding and of the code under test. Positive, normal values only.
struct Split {
  std::uint64_t mantissa;  // 24 bits
  int exponent;            // value = mantissa * 2^exponent
};
Split split(float value) {
  int exponent = 0;
  const float fraction = std::frexp(value, &exponent);  // exact
  return {std::uint64_t(std::ldexp(fraction, 24)), exponent - 24};
}

// The float nearest to numerator / denominator * 2^exponent, ties to the even mantissa.
float nearest_float(unsigned __int128 numerator, unsigned __int128 denominator, int exponent) {
  while (numerator >= (denominator << 24)) {
    denominator <<= 1;
    ++exponent;
  }
  while (numerator < (denominator << 23)) {
    numerator <<= 1;
    --exponent;
  }
  unsigned __int128 quotient = numerator / denominator;  // 24 significant bits
  const unsigned __int128 twice_remainder = 2 * (numerator % denominator);
  if (twice_remainder > denominator || (twice_remainder == denominator && (quotient & 1))) ++quotient;
  return std::ldexp(float(std::uint64_t(quotient)), exponent);
}
float exact_product(float a, float b) {
  const Split x = split(a), y = split(b);
  return nearest_float((unsigned __int128)x.mantissa * y.mantissa, 1, x.exponent + y.exponent);
}
float exact_quotient(float a, float b) {
  const Split x = split(a), y = split(b);
  return nearest_float(x.mantissa, y.mantissa, x.exponent - y.exponent);
}

TEST(ExactFp32Reference, RoundsOnceToNearestEven) {
  EXPECT_EQ(exact_quotient(1.0f, 3.0f), 0x1.555556p-2f);  // 1/3 = 0x1.5555555...p-2: up
  EXPECT_EQ(exact_quotient(1.0f, 6.0f), 0x1.555556p-3f);
  EXPECT_EQ(exact_product(0x1.000002p+0f, 0x1.8p+0f), 0x1.800004p+0f);  // 1.5 + 3*2^-24: a tie, to even
  EXPECT_EQ(exact_product(0x1.000002p+0f, 0x1.000002p+0f), 0x1.000004p+0f);  // 1 + 2^-22 + 2^-46: down
}

// The E2M1 code of each exact tie (ties to even): the code of the even neighbour.
struct Tie {
  float value;
  std::uint8_t code;
};
constexpr Tie kE2m1Ties[] = {{0.25f, 0},  {0.75f, 2}, {1.25f, 2}, {1.75f, 4},
                             {2.5f, 4},   {3.5f, 6},  {5.0f, 6}};

std::uint8_t code_at(const Nvfp4Matrix& matrix, std::int64_t col) { return e2m1::unpack(matrix.codes.data(), col); }

// --- Weights (ModelOpt): scale_2 = amax / 2688; s = block_amax / (6 * scale_2) -> E4M3;
// x = W / (s_e4m3 * scale_2). ---

TEST(QuantizeWeightBoundaries, GlobalScaleIsTheRoundedQuotient) {
  // 1015 / 2688 = 145/384 = 0x1.82aaaa|aaaa...p-2: the bits past the 24th are 1010..., below half
  // a unit, so the quotient rounds down. 1015 * float(1/2688) rounds up to 0x1.82aaacp-2.
  std::vector<float> row(16, 0.0f);
  row[3] = -1015.0f;
  EXPECT_EQ(exact_quotient(1015.0f, 2688.0f), 0x1.82aaaap-2f);
  EXPECT_EQ(quantize_weight(row.data(), 1, 16).global_scale, 0x1.82aaaap-2f);
  // The activation global scale is the same quotient.
  EXPECT_EQ(activation_global_scale(DenseView{row.data(), DType::f32, 1, 16}), 0x1.82aaaap-2f);
}

// scale_2 = 3528 / 2688 = 1.3125 exactly (21/16), so 6 * scale_2 = 7.875 and every block scale,
// divisor and quotient below is an exact FP32 operation: x lands exactly on the E2M1 tie (or the
// E4M3 midpoint) that the row was built from. Reciprocals of 7.875 and 1.96875 are not exact and
// move the products off the ties.
TEST(QuantizeWeightBoundaries, TiesUnderAGlobalScaleOf1_3125AreBitExact) {
  constexpr float kScale2 = 1.3125f;
  struct Block {
    float amax;
    std::uint8_t scale_code;  // E4M3 of amax / (6 * scale_2)
    float divisor;            // decoded scale * scale_2
    bool with_ties;           // the other 15 elements are +-tie * divisor and one zero
  };
  const Block blocks[] = {
      {3528.0f, 0x7E, 448.0f * kScale2, true},     // s = 448; divisor 588
      {11.8125f, 0x3C, 1.5f * kScale2, true},      // s = 1.5; divisor 1.96875 (1/1.96875 is inexact)
      // s = 8.3671875 / 7.875 = 1.0625, the midpoint of 1.0 (0x38, even) and 1.125 (0x39).
      {8.3671875f, 0x38, 1.0f * kScale2, true},
      // s = 9.3515625 / 7.875 = 1.1875, the midpoint of 1.125 (0x39) and 1.25 (0x3A, even).
      {9.3515625f, 0x3A, 1.25f * kScale2, false},
  };
  std::vector<float> row;
  std::vector<std::uint8_t> expected;
  for (const Block& block : blocks) {
    row.push_back(block.amax);
    expected.push_back(7);  // amax / divisor is 6, 6.375 or 5.7: above 5, code 7
    for (const Tie& tie : kE2m1Ties) {
      for (float sign : {1.0f, -1.0f}) {
        const float value = block.with_ties ? sign * tie.value * block.divisor : 0.0f;
        if (block.with_ties) ASSERT_EQ(double(value), sign * double(tie.value) * double(block.divisor)) << "inexact";
        row.push_back(value);
        expected.push_back(!block.with_ties ? 0 : sign < 0 ? tie.code | 0x8 : tie.code);
      }
    }
    row.push_back(0.0f);
    expected.push_back(0);
  }
  const Nvfp4Matrix q = quantize_weight(row.data(), 1, std::int64_t(row.size()));
  EXPECT_EQ(q.global_scale, kScale2);
  for (std::size_t block = 0; block < std::size(blocks); ++block)
    EXPECT_EQ(q.scales[block], blocks[block].scale_code) << "block " << block;
  for (std::size_t col = 0; col < row.size(); ++col)
    EXPECT_EQ(code_at(q, std::int64_t(col)), expected[col]) << "element " << col << " = " << row[col];
}

// --- Activations (TRT-LLM / FlashInfer convention): g = 1 / input_scale;
// sf = g * (block_amax * (1/6)) -> E4M3; out_scale = 1 / (sf_e4m3 * (1/g)); code = E2M1(x * out_scale). ---

// input_scale = 10/2688 rounded (a tensor whose amax is 10). 1/(1/input_scale) does not round back
// to it, and none of these values is a power of two.
constexpr float kInputScale = 0x1.e79e7ap-9f;

struct ActivationElement {
  float x;
  float scaled;  // x * out_scale, rounded: the exact tie where there is one
  std::uint8_t code;
};
struct ActivationBlock {
  float amax;
  float block_scale;  // sf before the E4M3 cast
  std::uint8_t scale_code;
  float scale;  // decoded
  float out_scale;
  std::vector<ActivationElement> elements;  // the first is amax; the rest of the block is zero
};

std::vector<ActivationBlock> activation_blocks() {
  return {
      // sf = 448 exactly (0x7E); out_scale = 0x1.333332p-1.
      {10.0f, 448.0f, 0x7E, 448.0f, 0x1.333332p-1f,
       {{10.0f, 0x1.7ffffep+2f, 7},
        {0x1.aaaaaep-2f, 0.25f, 0},  // 0.25 ties to 0
        {0x1.aaaaacp-2f, 0.25f, 0},
        {-0x1.aaaaaep-2f, -0.25f, 8},
        {0x1.0aaaacp+1f, 1.25f, 2},  // 1.25 ties to 1
        {-0x1.0aaaacp+1f, -1.25f, 10},
        {0x1.0aaaacp+2f, 2.5f, 4},  // 2.5 ties to 2
        {0x1.0aaaacp+3f, 5.0f, 6},  // 5 ties to 4
        {-0x1.0aaaacp+3f, -5.0f, 14}}},
      // sf = 268.8 rounded = 0x1.0cccccp+8, between 256 and 288: 256 (0x78).
      {6.0f, 0x1.0cccccp+8f, 0x78, 256.0f, 0x1.0cccccp+0f,
       {{6.0f, 0x1.933332p+2f, 7},
        {0x1.6db6dcp-1f, 0.75f, 2},  // 0.75 ties to 1
        {-0x1.6db6dcp-1f, -0.75f, 10}}},
      // sf = 1.0625 exactly, the midpoint of 1.0 (0x38, even) and 1.125 (0x39).
      {0x1.84924ap-6f, 0x1.1p+0f, 0x38, 1.0f, 0x1.0cccccp+8f, {{0x1.84924ap-6f, 6.375f, 7}}},
      // One float higher: sf = 1.0625 + 2^-23, above the midpoint: 1.125 (0x39).
      {0x1.84924cp-6f, 0x1.100002p+0f, 0x39, 1.125f, 0x1.dddddcp+7f, {{0x1.84924cp-6f, 0x1.6aaaacp+2f, 7}}},
  };
}

TEST(QuantizeActivationBoundaries, TheReferenceDerivesTheTable) {
  const float global = exact_quotient(1.0f, kInputScale);
  const float inverse_global = exact_quotient(1.0f, global);
  EXPECT_EQ(global, 0x1.0cccccp+8f);
  EXPECT_EQ(inverse_global, 0x1.e79e7cp-9f) << "1/(1/input_scale) must differ from input_scale";
  const float one_sixth = exact_quotient(1.0f, 6.0f);
  for (const ActivationBlock& block : activation_blocks()) {
    EXPECT_EQ(exact_product(global, exact_product(block.amax, one_sixth)), block.block_scale) << block.amax;
    const float out_scale = exact_quotient(1.0f, exact_product(block.scale, inverse_global));
    EXPECT_EQ(out_scale, block.out_scale) << block.amax;
    for (const ActivationElement& element : block.elements) {
      const float magnitude = exact_product(std::fabs(element.x), out_scale);
      EXPECT_EQ(element.x < 0 ? -magnitude : magnitude, element.scaled) << element.x;
    }
  }
}

TEST(QuantizeActivationBoundaries, TiesUnderANonPowerOfTwoInputScaleAreBitExact) {
  const std::vector<ActivationBlock> blocks = activation_blocks();
  std::vector<float> row(blocks.size() * 16, 0.0f);
  for (std::size_t block = 0; block < blocks.size(); ++block)
    for (std::size_t i = 0; i < blocks[block].elements.size(); ++i) row[block * 16 + i] = blocks[block].elements[i].x;
  const Nvfp4Matrix q = quantize_activation(DenseView{row.data(), DType::f32, 1, std::int64_t(row.size())}, kInputScale);
  EXPECT_EQ(q.global_scale, kInputScale);
  for (std::size_t block = 0; block < blocks.size(); ++block) {
    EXPECT_EQ(q.scales[block], blocks[block].scale_code) << "block " << block;
    for (std::size_t i = 0; i < 16; ++i) {
      const std::uint8_t expected = i < blocks[block].elements.size() ? blocks[block].elements[i].code : 0;
      EXPECT_EQ(code_at(q, std::int64_t(block * 16 + i)), expected) << "block " << block << " element " << i;
    }
  }
}

}  // namespace
}  // namespace fp4gemm
