// The fragment order of cuda_moe's expert codes (cuda_moe_code_order.hpp): a permutation of each
// word's bits, undone exactly, from which every fragment register holds the column pair the
// tensor-core kernels pair their activations with.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>

#include "moe/cuda_moe/cuda_moe_code_order.hpp"

namespace fp4gemm::moe::cuda_moe {
namespace {

// Columns c and c + 4 of a checkpoint word (nibble j at bits 4j..4j+3) placed as the decode trick
// wants them: code bits m, e0, e1 at BF16 bits 6, 7, 8 and the sign at 15, in both 16-bit lanes.
std::uint32_t expected_pair(std::uint32_t checkpoint_word, int pair) {
  std::uint32_t bits = 0;
  for (int lane = 0; lane < 2; ++lane) {
    const std::uint32_t code = (checkpoint_word >> (4 * (pair + 4 * lane))) & 0xFu;
    bits |= ((code & 0x7u) << (6 + 16 * lane)) | ((code >> 3) << (15 + 16 * lane));
  }
  return bits;
}

TEST(CudaMoeCodeOrder, EveryBitMovesToADistinctPlace) {
  for (int bit = 0; bit < 32; ++bit) {
    const std::uint32_t moved = to_fragment_order(1u << bit);
    EXPECT_EQ(__builtin_popcount(moved), 1) << "bit " << bit;
    EXPECT_EQ(to_checkpoint_order(moved), 1u << bit) << "bit " << bit;
  }
}

TEST(CudaMoeCodeOrder, FragmentRegistersHoldTheColumnPairs) {
  std::mt19937 random(20261206);
  for (int trial = 0; trial < 20000; ++trial) {
    const std::uint32_t word = random();
    const std::uint32_t fragment = to_fragment_order(word);
    ASSERT_EQ(to_checkpoint_order(fragment), word);
    for (int pair = 0; pair < 4; ++pair) {
      ASSERT_EQ(pair_bits(fragment, pair), expected_pair(word, pair)) << std::hex << "word " << word << " pair " << pair;
    }
  }
}

// Every code in every column comes out as its E2M1 value (the CUDA-core kernels' decode).
TEST(CudaMoeCodeOrder, PairValuesAreTheE2m1Values) {
  constexpr float kMagnitudes[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  for (std::uint32_t code = 0; code < 16; ++code) {
    const float expected = (code & 8u) ? -kMagnitudes[code & 7u] : kMagnitudes[code & 7u];
    for (int column = 0; column < 8; ++column) {
      const std::uint32_t word = 0x9u * 0x11111111u ^ (0x9u << (4 * column)) ^ (code << (4 * column));  // others: code 9
      float low = 0.0f, high = 0.0f;
      pair_values(to_fragment_order(word), column % 4, low, high);
      EXPECT_EQ(column < 4 ? low : high, expected) << "code " << code << " column " << column;
      EXPECT_EQ(column < 4 ? high : low, -0.5f) << "code 9 beside column " << column;
    }
  }
}

TEST(CudaMoeCodeOrder, TenShiftsEachWay) {
  // Each direction is a handful of shift-and-mask steps (the CUDA-core kernels pay them per word).
  EXPECT_LE(code_order_moves(true).count, 10);
  EXPECT_LE(code_order_moves(false).count, 10);
}

}  // namespace
}  // namespace fp4gemm::moe::cuda_moe
