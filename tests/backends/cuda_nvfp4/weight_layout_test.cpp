// The `cuda_nvfp4` weight layout and its register decode trick, emulated on the CPU lane by lane:
// every fragment register of every lane must decode to the element mma.m16n8k16 expects there.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <set>

#include "backends/cuda_nvfp4/activation_pack_layout.hpp"
#include "backends/cuda_nvfp4/weight_bits.hpp"
#include "backends/cuda_nvfp4/weight_layout.hpp"
#include "fp4gemm/format/e2m1.hpp"
#include "fp4gemm/format/e4m3.hpp"
#include "fp4gemm/format/half.hpp"
#include "fp4gemm/format/nvfp4_matrix.hpp"
#include "fp4gemm/format/scale_layout.hpp"
#include "support/test_support.hpp"

namespace fp4gemm::cuda_nvfp4 {
namespace {

// What the kernel does: cut fragment register `reg` out of the word (the kernel's own function),
// then read one BF16 lane, value * 2^-126.
float decode_lane(std::uint32_t word, int reg, bool high_lane) {
  const std::uint32_t bits = fragment_bits(word, reg);
  const std::uint16_t lane_bits = high_lane ? std::uint16_t(bits >> 16) : std::uint16_t(bits & 0xFFFF);
  return bf16_to_float(lane_bits) * std::ldexp(1.0f, 126);
}

TEST(CudaNvfp4Bits, EveryWordBitBelongsToExactlyOneElement) {
  std::uint32_t used = 0;
  for (int element = 0; element < 8; ++element)
    for (int bit = 0; bit < 4; ++bit) {
      const std::uint32_t mask = 1u << word_bit(element, bit);
      EXPECT_EQ(used & mask, 0u) << "element " << element << " bit " << bit;
      used |= mask;
    }
  EXPECT_EQ(used, 0xFFFFFFFFu);
}

TEST(CudaNvfp4Bits, RegisterThreeCopiesNeverOverlapSoTheProductIsAnExactOr) {
  // Three copies of the source bits, shifted by 2, 8 and 13: pairwise disjoint in 64 bits.
  const std::uint64_t sources = kRegister3Sources;
  const std::uint64_t copies[3] = {sources << 2, sources << 8, sources << 13};
  EXPECT_EQ(copies[0] & copies[1], 0u);
  EXPECT_EQ(copies[0] & copies[2], 0u);
  EXPECT_EQ(copies[1] & copies[2], 0u);
  EXPECT_EQ(sources * kRegister3Copies, copies[0] | copies[1] | copies[2]);
  // Registers 0..2 take their codes from the mask shifted right by 0, 3 and 6; register 3 from the rest.
  EXPECT_EQ(kLaneMask | (kLaneMask >> 3) | (kLaneMask >> 6) | kRegister3Sources, 0xFFFFFFFFu);
}

void expect_layout_decodes_to(const Nvfp4Matrix& weight) {
  const Nvfp4View view = weight.view();
  const DecodeLayout layout = make_decode_layout(view);
  const std::vector<float> expected = weight.dequantize(false);
  ASSERT_EQ(layout.row_tiles, (weight.rows + 15) / 16);
  ASSERT_EQ(layout.chunks, (weight.cols + 63) / 64);
  ASSERT_EQ(layout.row_blocks, (weight.rows + 127) / 128);
  ASSERT_EQ(layout.records.size(), std::size_t(layout.row_blocks * layout.chunks * kRecordBytes));
  // Every byte of the padding tiles (rows past the last tile, up to 128) is zero.
  for (std::int64_t tile = layout.row_tiles; tile < layout.row_blocks * kTilesPerBlock; ++tile)
    for (std::int64_t chunk = 0; chunk < layout.chunks; ++chunk)
      for (int lane = 0; lane < 32; ++lane) {
        for (int byte = 0; byte < 16; ++byte) ASSERT_EQ(layout.records[std::size_t(code_offset(tile, chunk, layout.chunks, lane) + byte)], 0);
        for (int byte = 0; byte < 2; ++byte) ASSERT_EQ(layout.records[std::size_t(scale_offset(tile, chunk, layout.chunks, lane) + byte)], 0);
      }
  for (std::int64_t tile = 0; tile < layout.row_tiles; ++tile) {
    for (std::int64_t chunk = 0; chunk < layout.chunks; ++chunk) {
      for (int lane = 0; lane < 32; ++lane) {
        const int g = lane / 4, t = lane % 4;
        const std::uint8_t* scale_bytes = layout.records.data() + scale_offset(tile, chunk, layout.chunks, lane);
        for (int block = 0; block < 4; ++block) {
          std::uint32_t word;
          std::memcpy(&word, layout.records.data() + code_offset(tile, chunk, layout.chunks, lane) + block * 4, 4);
          for (int p = 0; p < 4; ++p) {
            const int row = g + (p % 2) * 8;  // registers 1 and 3 hold row g+8
            // Lane t works on the chunk's NVFP4 block t only: one scale per row per chunk.
            const float scale = e4m3::decode(scale_bytes[p % 2]);
            for (int half = 0; half < 2; ++half) {
              // MMA block `block`, k-slot 2t+half (+8 for registers 2, 3) is chunk column 16t+4*block+half (+2).
              const int column = 16 * t + 4 * block + half + (p / 2) * 2;
              const std::int64_t n = tile * 16 + row, k = chunk * 64 + column;
              const float value = decode_lane(word, p, half == 1) * scale;
              const float want = (n < weight.rows && k < weight.cols) ? expected[std::size_t(n * weight.cols + k)] : 0.0f;
              ASSERT_EQ(value, want) << "tile " << tile << " chunk " << chunk << " lane " << lane << " block " << block
                                     << " register " << p << " half " << half;
            }
          }
        }
      }
    }
  }
}

TEST(CudaNvfp4Layout, EveryLaneDecodesItsFragmentAtPaddedShapes) {
  std::mt19937_64 rng(testing::fresh_seed());
  // 257 x 4096 is past the size from which the reorder runs on several threads.
  for (auto [rows, cols] : {std::pair<std::int64_t, std::int64_t>{16, 64}, {37, 80}, {1, 16}, {129, 272}, {257, 4096}}) {
    const std::vector<float> values = testing::random_values(rows * cols, rng);
    expect_layout_decodes_to(quantize_weight(values.data(), rows, cols));
  }
}

// The words straight from the definition: fragment element e of MMA block b, lane (g, t) is row
// g + 8 * (e / 2 % 2), chunk column 16t + 4b + e % 2 + 2 * (e / 4), its code bit i at word_bit(e, i).
// Byte-exact, so a sign flip on a zero code (which decodes equal) is caught too.
TEST(CudaNvfp4Layout, CodeWordsMatchTheBitByBitDefinition) {
  std::mt19937_64 rng(testing::fresh_seed());
  for (auto [rows, cols] : {std::pair<std::int64_t, std::int64_t>{37, 80}, {257, 4096}}) {
    Nvfp4Matrix weight;
    weight.rows = rows;
    weight.cols = cols;
    weight.codes.resize(std::size_t(rows * cols / 2));
    for (auto& byte : weight.codes) byte = std::uint8_t(rng());
    weight.scales.assign(std::size_t(rows * scale_layout::scale_cols(cols)), 0x38);
    const DecodeLayout layout = make_decode_layout(weight.view());
    for (std::int64_t tile = 0; tile < layout.row_tiles; ++tile)
      for (std::int64_t chunk = 0; chunk < layout.chunks; ++chunk)
        for (int lane = 0; lane < 32; ++lane)
          for (int block = 0; block < 4; ++block) {
            std::uint32_t want = 0;
            for (int element = 0; element < 8; ++element) {
              const std::int64_t n = tile * 16 + lane / 4 + 8 * (element / 2 % 2);
              const std::int64_t k = chunk * 64 + 16 * (lane % 4) + 4 * block + element % 2 + 2 * (element / 4);
              const std::uint32_t code = n < rows && k < cols ? e2m1::unpack(weight.codes.data() + n * (cols / 2), k) : 0;
              for (int bit = 0; bit < 4; ++bit) want |= ((code >> bit) & 1u) << word_bit(element, bit);
            }
            std::uint32_t word;
            std::memcpy(&word, layout.records.data() + code_offset(tile, chunk, layout.chunks, lane) + block * 4, 4);
            ASSERT_EQ(word, want) << rows << "x" << cols << " tile " << tile << " chunk " << chunk << " lane " << lane;
          }
  }
}

TEST(CudaNvfp4Layout, SwizzledScalesGiveTheSameLayout) {
  std::mt19937_64 rng(testing::fresh_seed());
  const std::vector<float> values = testing::random_values(130 * 96, rng);
  const Nvfp4Matrix linear = quantize_weight(values.data(), 130, 96);
  Nvfp4Matrix swizzled = linear;
  swizzled.scales = scale_layout::to_swizzled(linear.scales.data(), 130, 96);
  swizzled.scale_layout = ScaleLayout::swizzled_128x4;
  const DecodeLayout a = make_decode_layout(linear.view()), b = make_decode_layout(swizzled.view());
  EXPECT_EQ(a.records, b.records);
}

TEST(CudaNvfp4Layout, EveryCodeAndScaleSurvivesTheDecodeTrickExactly) {
  // value * 2^-126 in BF16, times scale * 2^118, must equal value * scale * 2^-8 exactly.
  for (int code = 0; code < 16; ++code) {
    std::uint32_t word = 0;  // the code as element a0 (register 0, low lane)
    for (int bit = 0; bit < 4; ++bit) word |= std::uint32_t((code >> bit) & 1) << word_bit(0, bit);
    const float decoded = decode_lane(word, 0, false);
    EXPECT_EQ(decoded, e2m1::decode(std::uint8_t(code))) << code;
    for (int scale = 0; scale < 0x7F; ++scale) {
      const float scale_value = e4m3::decode(std::uint8_t(scale));
      const float scaled_scale = scale_value * std::ldexp(1.0f, 118);
      ASSERT_EQ(bf16_to_float(float_to_bf16(scaled_scale)), scaled_scale) << "scale " << scale << " not exact in BF16";
      ASSERT_LT(scaled_scale, std::ldexp(1.0f, 128));
      const float product = (decoded * std::ldexp(1.0f, -126)) * scaled_scale;  // what fma.bf16x2 computes
      ASSERT_EQ(product, e2m1::decode(std::uint8_t(code)) * scale_value * std::ldexp(1.0f, -8));
      ASSERT_EQ(bf16_to_float(float_to_bf16(product)), product) << "product not exact in BF16";
    }
  }
}

// The packed activations (activation_pack_layout.hpp) fill each chunk exactly once, and k-slot s of
// MMA block b holds the chunk column the weight layout puts in that slot (weight_layout.hpp:
// slots 2t, 2t+1, 2t+8, 2t+9 of block b are columns 16t + 4b + {0, 1, 2, 3}).
TEST(CudaNvfp4ActivationPack, EveryTokenAndColumnHasItsOwnSlotInTheWeightsKOrder) {
  for (int tokens : {16, 32, 64}) {
    std::set<int> offsets;
    for (int token = 0; token < tokens; ++token) {
      for (int column = 0; column < kChunkK; ++column) {
        const int offset = packed_offset(tokens, token, column);
        ASSERT_EQ(offset % 2, 0);
        ASSERT_GE(offset, 0);
        ASSERT_LT(offset, packed_chunk_bytes(tokens));
        ASSERT_TRUE(offsets.insert(offset).second) << "token " << token << " column " << column;
        // Decompose as the wgmma descriptor reads it: block, token group (256 B), k-half (128 B),
        // row (16 B), slot (2 B).
        const int block = offset / int(packed_block_bytes(tokens));
        const int in_block = offset % int(packed_block_bytes(tokens));
        EXPECT_EQ(in_block / kCoreMatrixNStep, token / 8);
        EXPECT_EQ(in_block % 128 / 16, token % 8);
        const int half = in_block % kCoreMatrixNStep / kCoreMatrixKStep;
        const int k_slot = 8 * half + in_block % 16 / 2;
        const int t = k_slot % 8 / 2, low = k_slot % 2, high = k_slot / 8;
        EXPECT_EQ(column, kChunkColumnOfLane * t + 4 * block + low + 2 * high) << "tokens " << tokens;
      }
    }
  }
}

}  // namespace
}  // namespace fp4gemm::cuda_nvfp4
