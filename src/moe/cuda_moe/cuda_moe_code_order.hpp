#pragma once
// The order of the 8 codes inside each 32-bit word of cuda_moe's stacked experts, and how the
// tensor-core kernels (cuda_moe_mma.cu, wide/cuda_moe_wide.cu) cut a BF16x2 MMA fragment register
// out of such a word. Shared by the host (tests) and the kernels, so both use one definition.
//
// A word holds columns 8w..8w+7 of one row, as the checkpoint's does; only the bits inside it move.
// A lane (g = lane / 4, t = lane % 4) reads the 16 codes of a row at chunk columns 16t..16t+15 (one
// NVFP4 block: one scale per row and chunk) as two words. A sum over K does not care about order,
// so MMA block b (of a chunk's four 16-slot blocks) takes word b / 2, and its fragment register of
// k-slots 2t, 2t + 1 the column pair (p, p + 4) of that word, k-slots 2t + 8, 2t + 9 the pair
// (p + 1, p + 5), p = 2 (b % 2). The activations are paired the same way.
//
// Column pair (c, c + 4) is fragment register c of the word in cuda_nvfp4's fragment order
// (weight_bits.hpp: its low lane column c, its high lane column c + 4), so a register costs 1-3
// integer instructions (fragment_bits) instead of the 4 that two shifts and two masks of the
// checkpoint's nibble order take. prepare() moves the bits into that order on the device once
// (to_fragment_order: the same bytes, no second copy); the CUDA-core kernels (streaming, staged)
// take their FP32 values from the same registers (pair_values).
#include <cstdint>
#include <cstring>

#include "backends/cuda_common/host_device.hpp"
#include "backends/cuda_nvfp4/weight_bits.hpp"

namespace fp4gemm::moe::cuda_moe {

// Column c (0..7) of a word is element fragment_element(c) of cuda_nvfp4's fragment word:
// register c % 4, the high lane for c >= 4.
constexpr int fragment_element(int column) { return 2 * (column % 4) + column / 4; }

// The bit permutation as shifts: every bit that moves by the same distance is one shift and one
// mask (10 of them each way).
struct BitMoves {
  int count = 0;
  int shift[32] = {};
  std::uint32_t mask[32] = {};  // destination bits of each shift
};
constexpr BitMoves code_order_moves(bool to_fragment) {
  BitMoves moves;
  for (int column = 0; column < 8; ++column) {
    for (int bit = 0; bit < 4; ++bit) {
      const int checkpoint = 4 * column + bit, fragment = cuda_nvfp4::word_bit(fragment_element(column), bit);
      const int from = to_fragment ? checkpoint : fragment, to = to_fragment ? fragment : checkpoint;
      int i = 0;
      while (i < moves.count && moves.shift[i] != to - from) ++i;
      if (i == moves.count) moves.shift[moves.count++] = to - from;
      moves.mask[i] |= 1u << to;
    }
  }
  return moves;
}

template <bool kToFragment, int kMove = 0>
FP4GEMM_HOST_DEVICE std::uint32_t move_code_bits(std::uint32_t word) {
  constexpr BitMoves kMoves = code_order_moves(kToFragment);
  if constexpr (kMove == kMoves.count) {
    return 0;
  } else {
    constexpr int kShift = kMoves.shift[kMove];
    constexpr std::uint32_t kMask = kMoves.mask[kMove];
    const std::uint32_t moved = kShift >= 0 ? word << (kShift & 31) : word >> (-kShift & 31);
    return (moved & kMask) | move_code_bits<kToFragment, kMove + 1>(word);
  }
}

// A checkpoint word (column j's nibble at bits 4j..4j+3) in fragment order, and back (the tests
// prove the order a permutation with it).
FP4GEMM_HOST_DEVICE std::uint32_t to_fragment_order(std::uint32_t word) { return move_code_bits<true>(word); }
FP4GEMM_HOST_DEVICE std::uint32_t to_checkpoint_order(std::uint32_t word) { return move_code_bits<false>(word); }

// Columns `pair` and `pair` + 4 of a fragment-order word as BF16x2 bits of value·2^-126 (the decode
// trick: cuda_common/bf16_mma_decode.cuh).
FP4GEMM_HOST_DEVICE std::uint32_t pair_bits(std::uint32_t fragment_word, int pair) {
  return cuda_nvfp4::fragment_bits(fragment_word, pair);
}

// Columns `pair` and `pair` + 4 of a fragment-order word as their exact FP32 E2M1 values: the
// decode trick's bits times 2^126. Needs FP32 subnormals (nvcc's default, -ftz=false): 0.5·2^-126
// is one.
FP4GEMM_HOST_DEVICE void pair_values(std::uint32_t fragment_word, int pair, float& low, float& high) {
  const std::uint32_t bits = pair_bits(fragment_word, pair), low_bits = bits << 16, high_bits = bits & 0xFFFF0000u;
#if defined(__CUDA_ARCH__)
  low = __uint_as_float(low_bits) * 0x1p126f;
  high = __uint_as_float(high_bits) * 0x1p126f;
#else
  std::memcpy(&low, &low_bits, sizeof low);
  std::memcpy(&high, &high_bits, sizeof high);
  low *= 0x1p126f;
  high *= 0x1p126f;
#endif
}

}  // namespace fp4gemm::moe::cuda_moe
