#include "fp4gemm/format/e4m3.hpp"

#include <array>
#include <cmath>
#include <limits>

namespace fp4gemm::e4m3 {
namespace {

float decode_slow(std::uint8_t code) {
  const bool negative = code & 0x80;
  const int exponent = (code >> 3) & 0xF;
  const int mantissa = code & 0x7;
  if (exponent == 0xF && mantissa == 0x7) return std::numeric_limits<float>::quiet_NaN();
  const float magnitude = exponent == 0 ? std::ldexp(float(mantissa), -9)  // subnormal: m * 2^-9
                                        : std::ldexp(1.0f + mantissa / 8.0f, exponent - 7);
  return negative ? -magnitude : magnitude;
}

const std::array<float, 256>& table() {
  static const std::array<float, 256> values = [] {
    std::array<float, 256> result{};
    for (int code = 0; code < 256; ++code) result[code] = decode_slow(std::uint8_t(code));
    return result;
  }();
  return values;
}

}  // namespace

float decode(std::uint8_t code) { return table()[code]; }
const float* decode_table() { return table().data(); }

std::uint8_t encode(float x) {
  if (std::isnan(x)) return 0x7F;
  const std::uint8_t sign = std::signbit(x) ? 0x80 : 0x00;
  const float magnitude = std::fabs(x);
  // NOTE: satfinite: everything at or above the largest finite value clamps to 448 (0x7E),
  // infinities included; there is no E4M3 infinity to round to.
  if (magnitude >= kMax) return sign | kMaxCode;
  int exponent;  // magnitude = fraction * 2^exponent, fraction in [0.5, 1)
  std::frexp(magnitude, &exponent);
  const int unbiased = exponent - 1;  // magnitude in [2^unbiased, 2^(unbiased+1))
  if (magnitude == 0.0f) return sign;
  if (unbiased < -6) {
    // Subnormal range: quantum 2^-9; rounding up to 8 quanta lands exactly on the min normal code.
    const float quanta = std::nearbyint(std::ldexp(magnitude, 9));
    return sign | std::uint8_t(quanta);
  }
  float quanta = std::nearbyint(std::ldexp(magnitude, 3 - unbiased));  // in [8, 16]
  int biased = unbiased + 7;
  if (quanta == 16.0f) {
    quanta = 8.0f;
    biased += 1;
  }
  const int code = (biased << 3) | (int(quanta) - 8);
  return sign | std::uint8_t(code > kMaxCode ? kMaxCode : code);
}

}  // namespace fp4gemm::e4m3
