#pragma once
// E4M3 "fn": sign, 4 exponent bits (bias 7), 3 mantissa bits. Max 448, min normal 2^-6,
// min subnormal 2^-9. No Inf; 0x7F and 0xFF are NaN.
#include <cstdint>

namespace fp4gemm::e4m3 {

inline constexpr float kMax = 448.0f;
inline constexpr std::uint8_t kMaxCode = 0x7E;

float decode(std::uint8_t code);
inline bool is_nan(std::uint8_t code) { return (code & 0x7F) == 0x7F; }

// Round to nearest even with saturation to +-448 (satfinite); NaN encodes as 0x7F.
std::uint8_t encode(float x);

// All 256 decoded values, for table lookups in hot loops.
const float* decode_table();

}  // namespace fp4gemm::e4m3
