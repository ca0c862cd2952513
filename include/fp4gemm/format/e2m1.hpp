#pragma once
// E2M1 (FP4): sign, 2 exponent bits (bias 1), 1 mantissa bit. Codes 0..7 are
// 0, 0.5, 1, 1.5, 2, 3, 4, 6; codes 8..15 are their negatives (8 is -0). No Inf, no NaN.
#include <cstdint>

namespace fp4gemm::e2m1 {

inline constexpr float kValues[16] = {0.0f,  0.5f,  1.0f,  1.5f,  2.0f,  3.0f,  4.0f,  6.0f,
                                      -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f};
inline constexpr float kMax = 6.0f;

constexpr float decode(std::uint8_t code) { return kValues[code & 0xF]; }

// Round to nearest, ties to even, saturating at 6 (the ModelOpt / cvt.rn.satfinite rule):
// the magnitude code is the number of bounds {0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5} strictly below
// |x|, plus one where |x| is 0.75, 1.75 or 3.5 (ties whose even neighbour is the upper one).
// NOTE: the sign bit comes from x < 0, so -0.0 encodes as +0 while -0.1 encodes as code 8 (-0),
// exactly as ModelOpt's torch code does. NaN compares false everywhere and encodes as 0.
constexpr std::uint8_t encode(float x) {
  const float magnitude = x < 0.0f ? -x : x;
  constexpr float kBounds[7] = {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f};
  std::uint8_t code = 0;
  for (float bound : kBounds) code += magnitude > bound ? 1 : 0;
  if (magnitude == 0.75f || magnitude == 1.75f || magnitude == 3.5f) code += 1;
  if (x < 0.0f) code |= 0x8;
  return code;
}

// Two codes per byte: element 2i in the low nibble, element 2i+1 in the high nibble.
constexpr std::uint8_t pack(std::uint8_t even, std::uint8_t odd) {
  return static_cast<std::uint8_t>((even & 0xF) | ((odd & 0xF) << 4));
}
constexpr std::uint8_t unpack(const std::uint8_t* packed, std::int64_t index) {
  const std::uint8_t byte = packed[index >> 1];
  return (index & 1) ? (byte >> 4) : (byte & 0xF);
}

}  // namespace fp4gemm::e2m1
