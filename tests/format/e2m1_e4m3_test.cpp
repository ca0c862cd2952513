// Codecs over every code, ties, saturation, subnormals; cross-checked against the CUDA toolkit's
// own host conversions (cuda_fp8.h / cuda_fp4.h) when the toolkit is present.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "fp4gemm/format/e2m1.hpp"
#include "fp4gemm/format/e4m3.hpp"
#include "fp4gemm/format/half.hpp"

#ifdef FP4GEMM_WITH_CUDA
#include <cuda_fp4.h>
#include <cuda_fp8.h>
#endif

namespace fp4gemm {
namespace {

TEST(E2M1, DecodesEveryCode) {
  const float expected[16] = {0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0f, -0.5, -1, -1.5, -2, -3, -4, -6};
  for (int code = 0; code < 16; ++code) {
    EXPECT_EQ(e2m1::decode(std::uint8_t(code)), expected[code]) << code;
    EXPECT_EQ(std::signbit(e2m1::decode(std::uint8_t(code))), code >= 8) << code;
  }
}

TEST(E2M1, EncodeRoundTripsEveryRepresentableValue) {
  for (int code = 0; code < 16; ++code) {
    if (code == 8) continue;  // -0.0 encodes as +0 (sign from x < 0)
    EXPECT_EQ(e2m1::encode(e2m1::decode(std::uint8_t(code))), code) << code;
  }
  EXPECT_EQ(e2m1::encode(-0.0f), 0);
}

TEST(E2M1, TiesRoundToEven) {
  // tie -> expected value
  const std::pair<float, float> ties[] = {{0.25f, 0.0f}, {0.75f, 1.0f}, {1.25f, 1.0f}, {1.75f, 2.0f},
                                          {2.5f, 2.0f},  {3.5f, 4.0f},  {5.0f, 4.0f}};
  for (auto [input, value] : ties) {
    EXPECT_EQ(e2m1::decode(e2m1::encode(input)), value) << input;
    EXPECT_EQ(e2m1::decode(e2m1::encode(-input)), -value) << -input;
  }
  // Just off the ties rounds to the nearer value.
  EXPECT_EQ(e2m1::decode(e2m1::encode(std::nextafter(0.25f, 1.0f))), 0.5f);
  EXPECT_EQ(e2m1::decode(e2m1::encode(std::nextafter(5.0f, 10.0f))), 6.0f);
  EXPECT_EQ(e2m1::decode(e2m1::encode(std::nextafter(0.75f, 0.0f))), 0.5f);
}

TEST(E2M1, SaturatesAtSixAndMapsNanToZero) {
  EXPECT_EQ(e2m1::encode(6.0f), 7);
  EXPECT_EQ(e2m1::encode(1e30f), 7);
  EXPECT_EQ(e2m1::encode(std::numeric_limits<float>::infinity()), 7);
  EXPECT_EQ(e2m1::encode(-std::numeric_limits<float>::infinity()), 15);
  EXPECT_EQ(e2m1::encode(std::nanf("")), 0);
  EXPECT_EQ(e2m1::encode(-0.1f), 8);  // negative values below 0.25 keep their sign: -0
}

TEST(E2M1, PacksLowNibbleFirst) {
  const std::uint8_t packed[2] = {e2m1::pack(3, 12), e2m1::pack(7, 1)};
  EXPECT_EQ(packed[0], 0xC3);
  EXPECT_EQ(e2m1::unpack(packed, 0), 3);
  EXPECT_EQ(e2m1::unpack(packed, 1), 12);
  EXPECT_EQ(e2m1::unpack(packed, 2), 7);
  EXPECT_EQ(e2m1::unpack(packed, 3), 1);
}

TEST(E4M3, DecodesEveryCode) {
  for (int code = 0; code < 256; ++code) {
    const float value = e4m3::decode(std::uint8_t(code));
    const int exponent = (code >> 3) & 0xF, mantissa = code & 7;
    if ((code & 0x7F) == 0x7F) {
      EXPECT_TRUE(std::isnan(value)) << code;
      continue;
    }
    const double magnitude = exponent == 0 ? mantissa * std::ldexp(1.0, -9) : (1 + mantissa / 8.0) * std::ldexp(1.0, exponent - 7);
    EXPECT_EQ(double(value), (code & 0x80) ? -magnitude : magnitude) << code;
  }
  EXPECT_EQ(e4m3::decode(0x7E), 448.0f);
  EXPECT_EQ(e4m3::decode(0x08), std::ldexp(1.0f, -6));
  EXPECT_EQ(e4m3::decode(0x01), std::ldexp(1.0f, -9));
}

TEST(E4M3, EncodeRoundTripsAndRoundsTiesToEven) {
  for (int code = 0; code < 256; ++code) {
    if ((code & 0x7F) == 0x7F || code == 0x80) continue;
    EXPECT_EQ(e4m3::encode(e4m3::decode(std::uint8_t(code))), code) << code;
  }
  // Midpoints between neighbours go to the even mantissa.
  for (int code = 0; code < 0x7E; ++code) {
    const float low = e4m3::decode(std::uint8_t(code)), high = e4m3::decode(std::uint8_t(code + 1));
    const float middle = (low + high) / 2;
    const int expected = (code % 2 == 0) ? code : code + 1;
    EXPECT_EQ(e4m3::encode(middle), expected) << "between codes " << code << " and " << code + 1;
  }
}

TEST(E4M3, SaturatesAndHandlesSubnormalsAndNan) {
  EXPECT_EQ(e4m3::encode(448.0f), 0x7E);
  EXPECT_EQ(e4m3::encode(460.0f), 0x7E);
  EXPECT_EQ(e4m3::encode(1e9f), 0x7E);
  EXPECT_EQ(e4m3::encode(-1e9f), 0xFE);
  EXPECT_EQ(e4m3::encode(std::numeric_limits<float>::infinity()), 0x7E);
  EXPECT_EQ(e4m3::encode(std::nanf("")), 0x7F);
  EXPECT_EQ(e4m3::encode(std::ldexp(1.0f, -10)), 0x00);  // half the smallest subnormal: tie to 0
  EXPECT_EQ(e4m3::encode(std::ldexp(1.5f, -10)), 0x01);
  EXPECT_EQ(e4m3::encode(std::ldexp(3.0f, -10)), 0x02);  // 1.5 quanta: tie to even (2)
  EXPECT_EQ(e4m3::encode(std::ldexp(15.0f, -10)), 0x08);  // 7.5 quanta rounds to the min normal
}

TEST(Half, Bf16AndFp16RoundToNearestEven) {
  EXPECT_EQ(float_to_bf16(1.0f), 0x3F80);
  EXPECT_EQ(bf16_to_float(0x3F80), 1.0f);
  EXPECT_EQ(float_to_bf16(1.0f + std::ldexp(1.0f, -8)), 0x3F80);   // tie, even stays
  EXPECT_EQ(float_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3F82);  // tie, rounds up to even
  EXPECT_TRUE(std::isnan(bf16_to_float(float_to_bf16(std::nanf("")))));
  for (int bits = 0; bits < 0x7C00; ++bits) {
    ASSERT_EQ(float_to_fp16(fp16_to_float(std::uint16_t(bits))), bits) << bits;
  }
  EXPECT_EQ(float_to_fp16(65520.0f), 0x7C00);
  EXPECT_EQ(float_to_fp16(65519.0f), 0x7BFF);
  EXPECT_EQ(float_to_fp16(std::ldexp(1.0f, -25)), 0x0000);  // tie to even zero
}

#ifdef FP4GEMM_WITH_CUDA
// NVIDIA's own conversions, as an independent oracle for our codecs.
TEST(E4M3, MatchesCudaToolkitConversionEverywhere) {
  for (std::uint32_t bits = 0; bits < 0x7F800000u; bits += 0x1001u) {
    float value;
    std::memcpy(&value, &bits, 4);
    for (float x : {value, -value}) {
      const auto theirs = __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3);
      ASSERT_EQ(e4m3::encode(x), theirs) << x;
    }
  }
}

TEST(E2M1, MatchesCudaToolkitConversionEverywhere) {
  for (std::uint32_t bits = 0; bits < 0x7F800000u; bits += 0x1001u) {
    float value;
    std::memcpy(&value, &bits, 4);
    const auto theirs = __nv_cvt_float_to_fp4(value, __NV_E2M1, cudaRoundNearest);
    ASSERT_EQ(e2m1::encode(value), theirs) << value;
    // Negative: CUDA keeps the sign of -0 results as code 8, as we do for x < 0.
    const auto theirs_negative = __nv_cvt_float_to_fp4(-value, __NV_E2M1, cudaRoundNearest);
    if (value != 0.0f) ASSERT_EQ(e2m1::encode(-value), theirs_negative) << -value;
  }
}
#endif

}  // namespace
}  // namespace fp4gemm
