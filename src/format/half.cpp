#include "fp4gemm/format/half.hpp"

#include <cmath>

namespace fp4gemm {

float fp16_to_float(std::uint16_t bits) {
  const std::uint32_t sign = std::uint32_t(bits & 0x8000) << 16;
  const int exponent = (bits >> 10) & 0x1F;
  const std::uint32_t mantissa = bits & 0x3FF;
  float magnitude;
  if (exponent == 0) {
    magnitude = std::ldexp(float(mantissa), -24);
  } else if (exponent == 0x1F) {
    magnitude = mantissa ? std::nanf("") : INFINITY;
  } else {
    magnitude = std::ldexp(float(mantissa | 0x400), exponent - 25);
  }
  std::uint32_t out;
  std::memcpy(&out, &magnitude, sizeof out);
  out |= sign;
  float value;
  std::memcpy(&value, &out, sizeof value);
  return value;
}

std::uint16_t float_to_fp16(float value) {
  std::uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  const std::uint16_t sign = std::uint16_t((bits >> 16) & 0x8000);
  const std::uint32_t magnitude_bits = bits & 0x7FFFFFFFu;
  if (magnitude_bits > 0x7F800000u) return sign | 0x7E00;       // NaN
  if (magnitude_bits >= 0x477FF000u) return sign | 0x7C00;      // rounds to infinity (>= 65520)
  if (magnitude_bits < 0x38800000u) {                           // below 2^-14: subnormal half
    const float quanta = std::nearbyint(std::fabs(value) * 16777216.0f);  // exact scaling by 2^24
    return sign | std::uint16_t(quanta);
  }
  const std::uint32_t rebased = magnitude_bits - (112u << 23);  // float bias 127 -> half bias 15
  const std::uint32_t rounded = rebased + 0xFFFu + ((rebased >> 13) & 1u);
  return sign | std::uint16_t(rounded >> 13);
}

}  // namespace fp4gemm
