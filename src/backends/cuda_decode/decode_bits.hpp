#pragma once
// Where the 8 codes of one lane's A fragment sit in its 32-bit word, and how a fragment register
// is cut out of it. Shared by the host (layout, tests) and the kernel, so both use one definition.
//
// A fragment register holds two BF16 lanes; a code s|e1 e0 m must land at BF16 bits 15 | 8 7 6,
// i.e. word bits {6, 7, 8, 15} for the low lane and {22, 23, 24, 31} for the high one (mask
// kLaneMask). Registers 0..2 are cut with one rotate and one AND: their codes are stored at
// kLaneMask rotated left by 0, 3 and 6 bits (disjoint). The 8 leftover bits {0,1,3,4,16,17,19,20}
// hold register 3, reassembled from three rotations (no fourth disjoint rotation of the mask exists).
#include <cstdint>

#if defined(__CUDACC__)
#define FP4GEMM_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define FP4GEMM_HOST_DEVICE inline
#endif

namespace fp4gemm::cuda_decode {

inline constexpr std::uint32_t kLaneMask = 0x81C081C0u;  // bits 6,7,8,15 and 22,23,24,31

FP4GEMM_HOST_DEVICE constexpr std::uint32_t rotate_right(std::uint32_t x, int bits) {
  return bits == 0 ? x : (x >> bits) | (x << (32 - bits));
}

// Word bit that holds bit `code_bit` (0 = m, 1 = e0, 2 = e1, 3 = sign) of fragment element
// `element` (a0..a7; register element/2, high lane when element is odd).
constexpr int word_bit(int element, int code_bit) {
  constexpr int kLow[4] = {6, 7, 8, 15};  // BF16 bits of m, e0, e1, sign
  const int reg = element / 2, high = element % 2;
  const int target = kLow[code_bit] + 16 * high;
  if (reg < 3) return (target + 3 * reg) % 32;  // rotate_right(word, 3*reg) brings it to target
  // Register 3: m, e0 from bits 0,1 (rotated left by 6); e1 from bit 4 (left by 4); sign from bit 3 (left by 12).
  constexpr int kRegister3[4] = {0, 1, 4, 3};
  return kRegister3[code_bit] + 16 * high;
}

// Fragment register `reg` (0..3) of a word, as BF16x2 bits of value * 2^-126 (see the kernel).
FP4GEMM_HOST_DEVICE std::uint32_t fragment_bits(std::uint32_t word, int reg) {
  if (reg < 3) return rotate_right(word, 3 * reg) & kLaneMask;
  const std::uint32_t m_e0 = rotate_right(word, 32 - 6) & 0x00C000C0u;  // bits 0,1 -> 6,7
  const std::uint32_t e1 = rotate_right(word, 32 - 4) & 0x01000100u;    // bit 4 -> 8
  const std::uint32_t sign = rotate_right(word, 32 - 12) & 0x80008000u; // bit 3 -> 15
  return m_e0 | e1 | sign;
}

}  // namespace fp4gemm::cuda_decode
