#pragma once
// BF16 and FP16 conversions on the host (round to nearest even; NaN stays NaN).
#include <cstdint>
#include <cstring>

namespace fp4gemm {

inline float bf16_to_float(std::uint16_t bits) {
  const std::uint32_t wide = std::uint32_t(bits) << 16;
  float value;
  std::memcpy(&value, &wide, sizeof value);
  return value;
}

inline std::uint16_t float_to_bf16(float value) {
  std::uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) return std::uint16_t((bits >> 16) | 0x40);  // quiet NaN
  const std::uint32_t rounding = 0x7FFFu + ((bits >> 16) & 1u);
  return std::uint16_t((bits + rounding) >> 16);
}

float fp16_to_float(std::uint16_t bits);
std::uint16_t float_to_fp16(float value);

}  // namespace fp4gemm
