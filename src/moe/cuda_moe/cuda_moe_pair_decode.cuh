#pragma once
// How cuda_moe's tensor-core kernels (cuda_moe_mma.cu, wide/cuda_moe_wide.cu) cut a BF16x2 MMA
// fragment register out of the stacked linear NVFP4 layout, and the K order that goes with it.
//
// A lane (g = lane / 4, t = lane % 4) reads the 16 codes of a row at chunk columns 16t..16t+15
// (one NVFP4 block: one scale per row and chunk), as two 32-bit words of 8 columns each. A sum
// over K does not care about order, so MMA block b (of the chunk's four 16-slot blocks) takes
// word b / 2, and its k-slots 2t, 2t + 1 the column pair (p, p + 4) of that word, 2t + 8, 2t + 9
// the pair (p + 1, p + 5), p = 2 (b % 2): two nibbles 16 bits apart, as a BF16x2's lanes are.
// The activations must be paired the same way (moe_k_slot_column).
// CUDA sources only.
#include <cstdint>

namespace fp4gemm::moe::cuda_moe {

// Nibbles `pair` and `pair` + 4 of a code word (columns c and c + 4) as BF16x2 bits of value·2^-126:
// code bits 0-2 go to BF16 bits 6-8, bit 3 to bit 15, in both 16-bit lanes at once.
__device__ __forceinline__ std::uint32_t pair_bits(std::uint32_t word, int pair) {
  const int shift = 6 - 4 * pair;  // low bits; the sign moves 6 further
  const std::uint32_t low = shift >= 0 ? word << shift : word >> -shift;
  const std::uint32_t sign = shift + 6 >= 0 ? word << (shift + 6) : word >> -(shift + 6);
  return (low & 0x01C001C0u) | (sign & 0x80008000u);
}

// The chunk column (0..63) that k-slot `slot` (0..15) of MMA block `block` (0..3) holds.
__host__ __device__ constexpr int moe_k_slot_column(int block, int slot) {
  return 16 * (slot % 8 / 2) + 8 * (block / 2) + 2 * (block % 2) + 4 * (slot % 2) + slot / 8;
}

}  // namespace fp4gemm::moe::cuda_moe
