#pragma once
// Where the 8 codes of one lane's A fragment sit in its 32-bit word, and how a fragment register
// is cut out of it. Shared by the host (layout, tests) and the kernel, so both use one definition.
//
// A fragment register holds two BF16 lanes; a code s|e1 e0 m must land at BF16 bits 15 | 8 7 6,
// i.e. word bits {6, 7, 8, 15} for the low lane and {22, 23, 24, 31} for the high one (kLaneMask).
//
// Why this arrangement: the kernel is limited by the integer ALU pipe (LOP3/SHF issue at half the
// rate of the FMA pipe on Hopper), so each register is cut with as few ALU instructions as
// possible and the shifts are done as multiplications, which run on the FMA pipe:
//   register 0: word & mask                              (1 ALU)
//   register 1: (word * 8) & mask     codes at mask - 3   (1 ALU + 1 IMAD)
//   register 2: (word * 64) & mask    codes at mask - 6   (1 ALU + 1 IMAD)
//   register 3: the 8 leftover bits {10,11,13,14,26,27,29,30}, masked, times 2^2 + 2^8 + 2^13 as a
//               64-bit product; low | high word is then the three copies shifted left by 2, 8 and
//               13 bits modulo 32. The copies never overlap, so the product is an exact OR, and
//               each code bit lands on its target in exactly one copy  (2 ALU + 1 IMAD.WIDE)
// (found by exhaustive search; no arrangement cuts all four registers with one shift each).
#include <cstdint>

#include "backends/cuda_common/host_device.hpp"

namespace fp4gemm::cuda_nvfp4 {

inline constexpr std::uint32_t kLaneMask = 0x81C081C0u;         // bits 6,7,8,15 and 22,23,24,31
inline constexpr std::uint32_t kRegister3Sources = 0x6C006C00u; // bits 10,11,13,14,26,27,29,30
inline constexpr std::uint32_t kRegister3Copies = (1u << 2) | (1u << 8) | (1u << 13);

// Word bit that holds bit `code_bit` (0 = m, 1 = e0, 2 = e1, 3 = sign) of fragment element
// `element` (a0..a7; register element/2, high lane when element is odd).
constexpr int word_bit(int element, int code_bit) {
  constexpr int kLow[4] = {6, 7, 8, 15};  // BF16 bits of m, e0, e1, sign
  const int reg = element / 2, high = element % 2;
  const int target = kLow[code_bit] + 16 * high;
  if (reg < 3) return target - 3 * reg;  // word * 2^(3 reg) brings it to target
  // Register 3: the source whose copy (shifted by 2, 8 or 13, modulo 32) lands on the target.
  constexpr int kLowSources[4] = {30, 26, 27, 13};   // m (+8), e0 (+13), e1 (+13), sign (+2)
  constexpr int kHighSources[4] = {14, 10, 11, 29};  // m (+8), e0 (+13), e1 (+13), sign (+2)
  return high ? kHighSources[code_bit] : kLowSources[code_bit];
}

// Fragment register `reg` (0..3) of a word, as BF16x2 bits of value * 2^-126 (see the kernel).
FP4GEMM_HOST_DEVICE std::uint32_t fragment_bits(std::uint32_t word, int reg) {
  if (reg < 3) return (word * (1u << (3 * reg))) & kLaneMask;
  const std::uint64_t copies = std::uint64_t(word & kRegister3Sources) * kRegister3Copies;
  return (std::uint32_t(copies) | std::uint32_t(copies >> 32)) & kLaneMask;
}

}  // namespace fp4gemm::cuda_nvfp4
