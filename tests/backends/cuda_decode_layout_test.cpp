// The `cuda_decode` weight layout and its register decode trick, emulated on the CPU lane by lane:
// every fragment register of every lane must decode to the element mma.m16n8k16 expects there.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <set>

#include "backends/cuda_decode/activation_pack_layout.hpp"
#include "backends/cuda_decode/decode_bits.hpp"
#include "backends/cuda_decode/decode_layout.hpp"
#include "backends/cuda_decode/decode_tuning.hpp"
#include "backends/cuda_decode/resident_layout.hpp"
#ifdef FP4GEMM_WITH_CUDA
#include "backends/cuda_decode/sm90_decode_gemm.cuh"
#include "backends/cuda_decode/sm90_wgmma_gemm.cuh"
#endif
#include "fp4gemm/dispatch/preference.hpp"
#include "fp4gemm/format/e2m1.hpp"
#include "fp4gemm/format/e4m3.hpp"
#include "fp4gemm/format/half.hpp"
#include "fp4gemm/format/nvfp4_matrix.hpp"
#include "fp4gemm/format/scale_layout.hpp"
#include "support/test_support.hpp"

namespace fp4gemm::cuda_decode {
namespace {

constexpr int kH200Sms = 132;

// What the kernel does: cut fragment register `reg` out of the word (the kernel's own function),
// then read one BF16 lane, value * 2^-126.
float decode_lane(std::uint32_t word, int reg, bool high_lane) {
  const std::uint32_t bits = fragment_bits(word, reg);
  const std::uint16_t lane_bits = high_lane ? std::uint16_t(bits >> 16) : std::uint16_t(bits & 0xFFFF);
  return bf16_to_float(lane_bits) * std::ldexp(1.0f, 126);
}

TEST(CudaDecodeBits, EveryWordBitBelongsToExactlyOneElement) {
  std::uint32_t used = 0;
  for (int element = 0; element < 8; ++element)
    for (int bit = 0; bit < 4; ++bit) {
      const std::uint32_t mask = 1u << word_bit(element, bit);
      EXPECT_EQ(used & mask, 0u) << "element " << element << " bit " << bit;
      used |= mask;
    }
  EXPECT_EQ(used, 0xFFFFFFFFu);
}

TEST(CudaDecodeBits, RegisterThreeCopiesNeverOverlapSoTheProductIsAnExactOr) {
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

TEST(CudaDecodeLayout, EveryLaneDecodesItsFragmentAtPaddedShapes) {
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
TEST(CudaDecodeLayout, CodeWordsMatchTheBitByBitDefinition) {
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

TEST(CudaDecodeLayout, SwizzledScalesGiveTheSameLayout) {
  std::mt19937_64 rng(testing::fresh_seed());
  const std::vector<float> values = testing::random_values(130 * 96, rng);
  const Nvfp4Matrix linear = quantize_weight(values.data(), 130, 96);
  Nvfp4Matrix swizzled = linear;
  swizzled.scales = scale_layout::to_swizzled(linear.scales.data(), 130, 96);
  swizzled.scale_layout = ScaleLayout::swizzled_128x4;
  const DecodeLayout a = make_decode_layout(linear.view()), b = make_decode_layout(swizzled.view());
  EXPECT_EQ(a.records, b.records);
}

TEST(CudaDecodeLayout, EveryCodeAndScaleSurvivesTheDecodeTrickExactly) {
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

TEST(CudaDecodeTuning, ActivationTilesAreTheFewestThatHoldMUpToFourThenEight) {
  EXPECT_EQ(activation_tiles(1), 1);
  EXPECT_EQ(activation_tiles(8), 1);
  EXPECT_EQ(activation_tiles(9), 2);
  EXPECT_EQ(activation_tiles(17), 3);
  EXPECT_EQ(activation_tiles(24), 3);
  EXPECT_EQ(activation_tiles(25), 4);
  EXPECT_EQ(activation_tiles(32), 4);
  EXPECT_EQ(activation_tiles(33), 8);
  EXPECT_EQ(activation_tiles(kMaxActivationRows), 8);
  EXPECT_EQ(choose_launch_shape(20, 4096, 4096, 132, true).m_tiles, 3);
}

TEST(CudaDecodeTuning, ShapesCoverEveryM) {
  for (std::int64_t m = 1; m <= kMaxActivationRows; ++m) {
    for (std::int64_t n : {16, 4096, 28672}) {
      for (std::int64_t k : {16, 4096, 12288}) {
        const LaunchShape shape = choose_launch_shape(m, n, k, 132, true);
        EXPECT_GE(shape.m_tiles * 8, m);
        const int warps = shape.warps_n * shape.warps_k;
        EXPECT_TRUE(warps == 4 || warps == kPairedFillWarpsK || warps == 8 || warps == kWideWarpsK) << warps;
        EXPECT_TRUE(shape.tiles_per_warp == 1 || (shape.tiles_per_warp == 2 && shape.m_tiles <= kMaxPairedMTiles));
      }
    }
  }
}

TEST(CudaDecodeTuning, SplitsKToAboutThirtyTwoChunksPerWarpWhileTheGridIsLargeEnough) {
  // The four issue-3 shapes on 132 SMs (the sweeps' winners at M = 1 and M = 16).
  const auto shape_of = [](std::int64_t m, std::int64_t n, std::int64_t k) {
    const LaunchShape shape = choose_launch_shape(m, n, k, 132, true);
    return std::array<int, 3>{shape.warps_n, shape.warps_k, shape.tiles_per_warp};
  };
  using Shape = std::array<int, 3>;
  EXPECT_EQ(shape_of(1, 28672, 8192), (Shape{1, 4, 2}));   // 896 tile pairs, 128 chunks: 32 per warp
  EXPECT_EQ(shape_of(1, 12288, 4096), (Shape{1, 8, 2}));   // 384 pairs split 8 ways: 3072 warps
  // 128 pairs x 8 = 1024 warps: too few, single tiles; 256 x 8 = 2048 still short of 16 per SM,
  // so 12 K-warps (2 CTAs of 12 fill an SM's 24 resident warps)
  EXPECT_EQ(shape_of(1, 4096, 12288), (Shape{1, 12, 1}));
  EXPECT_EQ(shape_of(1, 4096, 4096), (Shape{1, 12, 1}));   // 64 chunks: 5 or 6 per warp
  EXPECT_EQ(shape_of(1, 4096, 512), (Shape{1, 8, 1}));     // 8 chunks: too few to split 12 ways
  EXPECT_EQ(shape_of(1, 4096, 1536), (Shape{1, 12, 1}));   // 24 chunks: 2 per warp suffice
  // 128 and 96 tiles x 12 warps still fill under 0.9 of 24 warps x 132 SMs: 12 ways would not
  // take PDL and measured slower than 8
  EXPECT_EQ(shape_of(1, 2048, 4096), (Shape{1, 8, 1}));
  EXPECT_EQ(shape_of(1, 1536, 4096), (Shape{1, 8, 1}));
  EXPECT_EQ(shape_of(4, 4096, 12288), (Shape{1, 12, 1}));
  EXPECT_EQ(shape_of(16, 28672, 8192), (Shape{1, 4, 2}));
  // 384 pairs x 4 = 1536 warps: 11 per SM suffice at two tiles, but 384 CTAs of 4 warps fill 0.73
  // of the 4 x 132 slots; 5 warps per CTA (3 per SM) fill 0.97
  EXPECT_EQ(shape_of(16, 12288, 4096), (Shape{1, 5, 2}));
  EXPECT_EQ(shape_of(9, 12288, 4096), (Shape{1, 5, 2}));
  EXPECT_EQ(shape_of(16, 14336, 4096), (Shape{1, 4, 2}));  // 448 pairs: more than 3 x 132, one wave no longer
  EXPECT_EQ(shape_of(8, 12288, 4096), (Shape{1, 8, 2}));   // one activation tile: 384 CTAs of 8 warps fill 0.97 already
  EXPECT_EQ(shape_of(16, 4096, 4096), (Shape{1, 8, 1}));
  EXPECT_EQ(shape_of(24, 28672, 8192), (Shape{1, 4, 1}));  // three activation tiles: one weight tile per warp
  EXPECT_EQ(shape_of(32, 12288, 4096), (Shape{2, 2, 1}));
  EXPECT_EQ(shape_of(64, 12288, 4096), (Shape{2, 4, 1}));  // eight tiles: a fixed shape
}

// The H200's occupancy of the compiled kernels (ptxas registers -> CTAs per SM; what
// decode_gemm_resident_ctas_per_sm answered there), for the wave rule on a host without a GPU.
int h200_resident_ctas_per_sm(const LaunchShape& shape) {
  const int warps = shape.warps_n * shape.warps_k;
  if (shape.m_tiles == 1) return shape.tiles_per_warp == 2 && warps == 4 ? 7 : 24 / warps;  // 72 and 80 registers
  if (shape.m_tiles == 2 || shape.m_tiles == 3) return 16 / warps;                          // 126-128 registers
  return shape.m_tiles == 4 ? 12 / warps : 14 / warps;                                       // 138 and 143
}

std::array<int, 3> fields_of(const LaunchShape& shape) { return {shape.warps_n, shape.warps_k, shape.tiles_per_warp}; }

TEST(CudaDecodeTuning, AGridOfAPartialSecondWaveTakesTheMeasuredOneWaveAlternative) {
  const auto shape_of = [](std::int64_t m, std::int64_t n, std::int64_t k) {
    return fields_of(choose_launch_shape(m, n, k, 132, true, h200_resident_ctas_per_sm));
  };
  using Shape = std::array<int, 3>;
  // The size rule's 512 CTAs of 1x8 warps take 1.29 waves of 3 x 132 slots; tile pairs halve them.
  EXPECT_EQ(fields_of(choose_launch_shape(1, 8192, 8192, 132, true)), (Shape{1, 8, 1}));
  EXPECT_EQ(shape_of(1, 8192, 8192), (Shape{1, 8, 2}));
  EXPECT_EQ(shape_of(4, 8192, 28672), (Shape{1, 8, 2}));
  // 448 tile-pair CTAs of 8 warps: 1.13 waves; 4-warp CTAs fit 7 per SM.
  EXPECT_EQ(fields_of(choose_launch_shape(1, 14336, 4096, 132, true)), (Shape{1, 8, 2}));
  EXPECT_EQ(shape_of(1, 14336, 4096), (Shape{1, 4, 2}));
  EXPECT_EQ(shape_of(16, 10240, 8192), (Shape{1, 4, 2}));  // two activation tiles: 320 CTAs, 1.21 -> 0.61 waves
}

TEST(CudaDecodeTuning, TheWaveRuleLeavesTheIssueShapesAndGridsOfOneOrSeveralWavesAlone) {
  for (std::int64_t m : {1, 4, 16, 24, 32}) {
    for (const auto& [n, k] : std::array<std::array<std::int64_t, 2>, 6>{
             {{4096, 4096}, {12288, 4096}, {4096, 12288}, {28672, 8192}, {57344, 8192}, {28672, 4096}}}) {
      if (m > 24 && n == 4096) continue;  // four activation tiles on 4096 rows: row pairs (below)
      EXPECT_EQ(fields_of(choose_launch_shape(m, n, k, 132, true, h200_resident_ctas_per_sm)),
                fields_of(choose_launch_shape(m, n, k, 132, true)))
          << m << "x" << n << "x" << k;
    }
  }
}

TEST(CudaDecodeTuning, ThreeAndFourActivationTilesTakeCtasOfTwiceTheRowsWhereTheRulesGridTakesUpToTwoWaves) {
  using Shape = std::array<int, 3>;
  const auto shape_of = [](std::int64_t m, std::int64_t n, std::int64_t k) {
    return fields_of(choose_launch_shape(m, n, k, 132, true, h200_resident_ctas_per_sm));
  };
  // Four tiles: 256 CTAs of 1x8 warps at one per SM take 1.94 waves; 2x4 fits one (measured 7-23%
  // faster). Three tiles hold two 8-warp CTAs per SM, so 1x8 fits one wave already.
  for (std::int64_t m : {17, 24}) EXPECT_EQ(shape_of(m, 4096, 4096), (Shape{1, 8, 1})) << m;
  for (std::int64_t m : {25, 32}) {
    for (std::int64_t k : {2048, 4096, 8192, 12288, 16384}) {
      EXPECT_EQ(fields_of(choose_launch_shape(m, 4096, k, 132, true)), (Shape{1, 8, 1})) << m << "x4096x" << k;
      EXPECT_EQ(shape_of(m, 4096, k), (Shape{2, 4, 1})) << m << "x4096x" << k;
    }
  }
  // Up to 1.5 waves the half-K split comes first, as for fewer tiles: 3072 rows at four tiles
  // (1.45 waves), 5120 rows at three (320 CTAs of 1x8 at two per SM, 1.21 waves).
  EXPECT_EQ(shape_of(32, 3072, 4096), (Shape{1, 4, 1}));
  EXPECT_EQ(shape_of(20, 5120, 4096), (Shape{1, 4, 1}));
  // 5120 rows: 2.42 waves, and row pairs would still take 1.21: the rule's shape stays.
  EXPECT_EQ(shape_of(32, 5120, 4096), (Shape{1, 8, 1}));
  // One wave already: unchanged.
  EXPECT_EQ(shape_of(32, 2048, 4096), (Shape{1, 8, 1}));
  // Two activation tiles have no row pairs: M = 16 on 4096x4096 (256 CTAs of 1x8 warps at two per
  // SM, 0.97 waves) keeps the rule's shape.
  EXPECT_EQ(shape_of(16, 4096, 4096), fields_of(choose_launch_shape(16, 4096, 4096, 132, true)));
}

TEST(CudaDecodeTuning, UnknownOccupancyOrNoOneWaveAlternativeKeepsTheRulesShape) {
  const auto unknown = [](const LaunchShape&) { return 0; };
  EXPECT_EQ(fields_of(choose_launch_shape(1, 8192, 8192, 132, true, unknown)), fields_of(choose_launch_shape(1, 8192, 8192, 132, true)));
  // Only the rule's own kernel is known: no alternative fits one wave.
  const auto only_rule = [](const LaunchShape& shape) { return shape.tiles_per_warp == 1 && shape.warps_k == 8 ? 3 : 0; };
  EXPECT_EQ(fields_of(choose_launch_shape(1, 8192, 8192, 132, true, only_rule)), (std::array<int, 3>{1, 8, 1}));
  // The rule's 1.29 waves; tile pairs at 1 CTA per SM would take 1.94 (256 / 132), so the second
  // alternative, 1x4 at 4 per SM (512 / 528), is taken.
  const auto pairs_full = [](const LaunchShape& shape) {
    return shape.tiles_per_warp == 2 ? 1 : shape.warps_k == 8 ? 3 : 4;
  };
  EXPECT_EQ(fields_of(choose_launch_shape(1, 8192, 8192, 132, true, pairs_full)), (std::array<int, 3>{1, 4, 1}));
}

TEST(CudaDecodeTuning, TheSplitsThatFillTheGpuForPdlAreNotUsedWithoutIt) {
  const auto shape_of = [](std::int64_t m, std::int64_t n, std::int64_t k) {
    const LaunchShape shape = choose_launch_shape(m, n, k, 132, false);
    return std::array<int, 3>{shape.warps_n, shape.warps_k, shape.tiles_per_warp};
  };
  using Shape = std::array<int, 3>;
  EXPECT_EQ(shape_of(1, 4096, 12288), (Shape{1, 8, 1}));
  EXPECT_EQ(shape_of(1, 4096, 4096), (Shape{1, 8, 1}));
  EXPECT_EQ(shape_of(16, 12288, 4096), (Shape{1, 4, 2}));
  EXPECT_EQ(shape_of(1, 28672, 8192), (Shape{1, 4, 2}));  // the others do not change
  EXPECT_EQ(shape_of(1, 12288, 4096), (Shape{1, 8, 2}));
}

// The packed activations (activation_pack_layout.hpp) fill each chunk exactly once, and k-slot s of
// MMA block b holds the chunk column the weight layout puts in that slot (decode_layout.hpp:
// slots 2t, 2t+1, 2t+8, 2t+9 of block b are columns 16t + 4b + {0, 1, 2, 3}).
TEST(CudaDecodeActivationPack, EveryTokenAndColumnHasItsOwnSlotInTheWeightsKOrder) {
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

// The auto rows that put cuda_decode first from M = 33 (dispatch/preference.cpp) were measured with
// its wgmma kernel: every problem they send to it must get that kernel.
TEST(CudaDecodeTuning, TheAutoRowsThatPreferCudaDecodeAboveMThirtyTwoGetTheWgmmaKernel) {
  unsetenv("FP4GEMM_DECODE_KERNEL");
  int preferred = 0;
  for (std::int64_t m : {33, 48, 64})
    for (std::int64_t n : {2048, 4096, 6144, 8192, 12288, 14336, 16384, 28672, 57344})
      for (std::int64_t k : {1024, 2048, 4096, 8192, 14336, 28672}) {
        if (dispatch::preference_for(dispatch::ArchFamily::sm90, m, n, k).order.front() != "cuda_decode") continue;
        ++preferred;
        EXPECT_EQ(choose_decode_kernel(m, n, k, 90, kH200Sms), DecodeKernel::wgmma) << m << "x" << n << "x" << k;
      }
  EXPECT_GT(preferred, 0);
}

TEST(CudaDecodeTuning, WgmmaKernelRunsOnSm90ForLargeWeightsFromItsMinimumM) {
  unsetenv("FP4GEMM_DECODE_KERNEL");
  const auto wgmma = [](std::int64_t m, std::int64_t n, std::int64_t k, int sm) {
    return choose_decode_kernel(m, n, k, sm, kH200Sms) == DecodeKernel::wgmma;
  };
  EXPECT_FALSE(wgmma(64, 28672, 8192, 80));
  EXPECT_FALSE(wgmma(64, 28672, 8192, 100));
  // The measured winners and losers from M = 33 (bench/results/2026-12-01-h200-s14.md, calls 5
  // and 10; 2026-12-01-h200-s15.md).
  EXPECT_TRUE(wgmma(64, 12288, 4096, 90));
  EXPECT_TRUE(wgmma(64, 4096, 12288, 90));
  EXPECT_TRUE(wgmma(33, 6144, 4096, 90));
  EXPECT_TRUE(wgmma(64, 28672, 8192, 90));
  EXPECT_TRUE(wgmma(64, 8192, 1024, 90));
  EXPECT_TRUE(wgmma(64, 4096, 4096, 90));    // wgmma by 16% at M = 64
  EXPECT_TRUE(wgmma(33, 2048, 8192, 90));
  EXPECT_FALSE(wgmma(64, 2048, 4096, 90));  // mma.sync by 13-20%
  EXPECT_FALSE(wgmma(64, 4096, 2048, 90));
  EXPECT_FALSE(wgmma(64, 2048, 2048, 90));
  // M = 17-32: where two warpgroups per CTA cover 80% of the SMs (2026-12-01-h200-s16.md, calls 1-2).
  EXPECT_TRUE(wgmma(32, 28672, 8192, 90));  // 224 CTAs
  EXPECT_TRUE(wgmma(17, 16384, 2048, 90));  // 128
  EXPECT_TRUE(wgmma(17, 14336, 4096, 90));  // 112
  EXPECT_TRUE(wgmma(17, 8192, 4096, 90));   // 128 (64 two-CTA clusters)
  EXPECT_TRUE(wgmma(32, 8192, 8192, 90));
  EXPECT_TRUE(wgmma(24, 8192, 28672, 90));
  EXPECT_TRUE(wgmma(32, 8448, 8192, 90));   // 132
  EXPECT_FALSE(wgmma(32, 12288, 8192, 90));  // 96: mma.sync by 1-11%
  EXPECT_FALSE(wgmma(32, 12288, 4096, 90));  // 96: mma.sync by 7-17%
  EXPECT_FALSE(wgmma(17, 6144, 8192, 90));   // 96: mma.sync by 15-23%
  EXPECT_FALSE(wgmma(17, 10240, 8192, 90));  // 80
  EXPECT_FALSE(wgmma(17, 4096, 12288, 90));  // 128 CTAs of one warpgroup: mma.sync by 13%
  EXPECT_FALSE(wgmma(17, 16384, 1024, 90));  // K below 2048: mma.sync by 4%
  EXPECT_FALSE(wgmma(16, 28672, 8192, 90));
  EXPECT_FALSE(wgmma(16, 8192, 8192, 90));   // mma.sync by 45% at M = 16
  // The bounds themselves.
  EXPECT_TRUE(wgmma(kWgmmaMinM, kWgmmaMinN, 16, 90));
  EXPECT_FALSE(wgmma(kWgmmaMinM - 1, kWgmmaMinN, 16, 90));
  EXPECT_TRUE(wgmma(kWgmmaMinM, 4096, kWgmmaMinElements / 4096, 90));
  EXPECT_FALSE(wgmma(kWgmmaMinM, 4096, kWgmmaMinElements / 4096 - 16, 90));
  EXPECT_TRUE(wgmma(kWgmmaFilledMinM, 8192, kWgmmaFilledMinK * 2, 90));
  EXPECT_FALSE(wgmma(kWgmmaFilledMinM - 1, 8192, kWgmmaFilledMinK * 2, 90));
  EXPECT_FALSE(wgmma(kWgmmaFilledMinM, 16384, kWgmmaFilledMinK - 16, 90));
  EXPECT_TRUE(wgmma(kWgmmaFilledMinM, 16384, kWgmmaFilledMinK, 90));
  // The fill bound: 106 CTAs of 128 rows are 80.3% of 132 SMs, 105 are 79.5%.
  EXPECT_TRUE(wgmma(kWgmmaFilledMinM, 106 * 128, 4096, 90));
  EXPECT_FALSE(wgmma(kWgmmaFilledMinM, 105 * 128, 4096, 90));
  EXPECT_TRUE(wgmma_grid_fills_sms(17, 8192, 8192, kH200Sms));
  EXPECT_FALSE(wgmma_grid_fills_sms(17, 8192, 8192, 0));  // SMs unknown: mma.sync
  EXPECT_EQ(choose_decode_kernel(17, 8192, 8192, 90, 0), DecodeKernel::mma);
  setenv("FP4GEMM_DECODE_KERNEL", "wgmma", 1);
  EXPECT_TRUE(wgmma(1, 16, 16, 90));
  EXPECT_FALSE(wgmma(1, 16, 16, 80));  // never on another GPU
  setenv("FP4GEMM_DECODE_KERNEL", "mma", 1);
  EXPECT_FALSE(wgmma(64, 28672, 8192, 90));
  setenv("FP4GEMM_DECODE_KERNEL", "tensor", 1);
  EXPECT_THROW(wgmma(64, 28672, 8192, 90), Error);
  unsetenv("FP4GEMM_DECODE_KERNEL");
}

TEST(CudaDecodeTuning, TheResidentKernelIsForcedOnlyOnSm90AndOnlyWhereItsKSliceFits) {
  setenv("FP4GEMM_DECODE_KERNEL", "resident", 1);
  EXPECT_EQ(choose_decode_kernel(64, 28672, 8192, 90, kH200Sms), DecodeKernel::resident);
  EXPECT_EQ(choose_decode_kernel(17, 300, 16, 90, kH200Sms), DecodeKernel::resident);
  EXPECT_EQ(choose_decode_kernel(64, 28672, 8192, 80, kH200Sms), DecodeKernel::mma);
  // 64 tokens hold 19 chunks per CTA: K = 16 x 20 chunks does not fit even a 16-CTA cluster.
  EXPECT_EQ(choose_decode_kernel(64, 4096, 16 * 20 * 64, 90, kH200Sms), DecodeKernel::wgmma);
  unsetenv("FP4GEMM_DECODE_KERNEL");
  EXPECT_STREQ(decode_kernel_name(DecodeKernel::resident), "resident wgmma");
}

TEST(CudaDecodeTuning, ResidentSplitsAreTheFewestWhoseSliceFitsSharedMemory) {
  unsetenv("FP4GEMM_RESIDENT_SPLITS");
  // The sizing table of docs/design/activation-stationary-wgmma.md, at 64 and at 32 tokens.
  const struct {
    std::int64_t m, k;
    int splits;
  } expected[] = {{64, 8192, 8}, {64, 4096, 4}, {64, 12288, 16}, {33, 8192, 8}, {32, 8192, 4},
                  {32, 4096, 2}, {17, 12288, 8}, {64, 64, 1},    {20, 16, 1}};
  for (const auto& e : expected) {
    const ResidentShape shape = choose_resident_shape(e.m, e.k, kSm90SharedBytesPerBlock);
    EXPECT_EQ(shape.tokens, e.m <= 32 ? 32 : 64);
    ASSERT_EQ(shape.splits, e.splits) << "M " << e.m << " K " << e.k;
    const ResidentLayout layout{shape.tokens};
    const std::int64_t chunks = (e.k + kChunkK - 1) / kChunkK;
    EXPECT_LE(layout.bytes(int((chunks + shape.splits - 1) / shape.splits)), kSm90SharedBytesPerBlock);
    if (shape.splits > 1) {
      const std::int64_t fewer = shape.splits / 2;
      EXPECT_GT(layout.bytes(int((chunks + fewer - 1) / fewer)), kSm90SharedBytesPerBlock) << "M " << e.m << " K " << e.k;
    }
  }
  EXPECT_EQ(choose_resident_shape(64, 16 * 20 * 64, kSm90SharedBytesPerBlock).splits, 0);
  EXPECT_EQ(choose_resident_shape(64, 8192, 100 * 1024).splits, 0) << "less shared memory: nothing fits";
  setenv("FP4GEMM_RESIDENT_SPLITS", "16", 1);
  EXPECT_EQ(choose_resident_shape(64, 8192, kSm90SharedBytesPerBlock).splits, 16);
  setenv("FP4GEMM_RESIDENT_SPLITS", "2", 1);
  EXPECT_EQ(choose_resident_shape(64, 8192, kSm90SharedBytesPerBlock).splits, 0) << "a forced split that does not fit";
  for (const char* bad : {"3", "0", "32", "4x", "-4"}) {
    setenv("FP4GEMM_RESIDENT_SPLITS", bad, 1);
    EXPECT_THROW(choose_resident_shape(64, 8192, kSm90SharedBytesPerBlock), Error) << bad;
  }
  unsetenv("FP4GEMM_RESIDENT_SPLITS");
}

TEST(CudaDecodeTuning, ResidentLayoutRegionsAreAlignedAndDisjoint) {
  for (int tokens : {32, 64}) {
    const ResidentLayout layout{tokens};
    EXPECT_EQ(layout.receive_offset(), kResidentStages * kRecordBytes);
    EXPECT_EQ(layout.table_offset(), layout.receive_offset() + kResidentKGroups * ResidentLayout::kRows * (tokens + 2) * 4);
    EXPECT_EQ(layout.receive_stride() % 2, 0) << "pairs of floats stay 8-byte aligned";
    EXPECT_GE(layout.activation_offset(), layout.barrier_offset() + ResidentLayout::kBarriers * 8);
    EXPECT_EQ(layout.activation_offset() % 128, 0);
    EXPECT_EQ(layout.bytes(3), layout.activation_offset() + 3 * tokens * kChunkK * 2);
    const int capacity = layout.slice_capacity(kSm90SharedBytesPerBlock);
    EXPECT_LE(layout.bytes(capacity), kSm90SharedBytesPerBlock);
    EXPECT_GT(layout.bytes(capacity + 1), kSm90SharedBytesPerBlock);
  }
}

TEST(CudaDecodeTuning, ProgrammaticLaunchFollowsTheGridUnlessForcedAndNeverBeforeSm90) {
  unsetenv("FP4GEMM_PDL");
  EXPECT_EQ(programmatic_launch_policy(90), ProgrammaticLaunch::when_grid_fills);
  EXPECT_EQ(programmatic_launch_policy(100), ProgrammaticLaunch::when_grid_fills);
  EXPECT_EQ(programmatic_launch_policy(89), ProgrammaticLaunch::off);  // griddepcontrol needs SM 9.0
  EXPECT_EQ(programmatic_launch_policy(80), ProgrammaticLaunch::off);
  setenv("FP4GEMM_PDL", "1", 1);
  EXPECT_EQ(programmatic_launch_policy(90), ProgrammaticLaunch::on);
  EXPECT_EQ(programmatic_launch_policy(80), ProgrammaticLaunch::off);  // never before SM 9.0
  setenv("FP4GEMM_PDL", "0", 1);
  EXPECT_EQ(programmatic_launch_policy(90), ProgrammaticLaunch::off);
  setenv("FP4GEMM_PDL", "yes", 1);
  EXPECT_THROW(programmatic_launch_policy(90), Error);
  EXPECT_THROW(programmatic_launch_policy(80), Error);  // a bad value is refused on every GPU
  unsetenv("FP4GEMM_PDL");
}

TEST(CudaDecodeTuning, AGridFillsTheGpuFromNinetyPercentOfItsResidentSlots) {
  // The H200 figures behind the rule (decode_tuning.hpp): 132 SMs.
  EXPECT_TRUE(grid_fills_gpu(896, 7, 132));   // M = 1 28672x8192: 896 of 924 slots
  EXPECT_TRUE(grid_fills_gpu(896, 4, 132));   // M = 16 28672x8192: 1.7 waves
  EXPECT_FALSE(grid_fills_gpu(256, 3, 132));  // M = 1 4096x12288: 256 of 396
  EXPECT_FALSE(grid_fills_gpu(384, 4, 132));  // M = 16 12288x4096: 384 of 528
  EXPECT_TRUE(grid_fills_gpu(256, 2, 132));   // M = 16 4096x12288: 256 of 264
  EXPECT_FALSE(grid_fills_gpu(237, 2, 132));  // just under 0.9 x 264
  EXPECT_TRUE(grid_fills_gpu(238, 2, 132));
  EXPECT_FALSE(grid_fills_gpu(1000, 0, 132));  // occupancy unknown: no PDL
}

TEST(CudaDecodeTuning, WgmmaShapesCoverTheirTokensAndSplitKWithinACluster) {
  for (std::int64_t m = 1; m <= kMaxActivationRows; ++m) {
    for (std::int64_t n : {16, 4096, 8192, 28672}) {  // 8192 x 12288: the paired split
      for (std::int64_t k : {16, 4096, 12288}) {
        const WgmmaShape shape = choose_wgmma_shape(m, n, k, 132);
        EXPECT_GE(shape.tokens, m);
        EXPECT_TRUE(shape.tokens == 16 || shape.tokens == 32 || shape.tokens == 64);
        EXPECT_GE(shape.splits, 1);
        EXPECT_GE(shape.multicast, 1);
        EXPECT_LE(shape.splits * shape.multicast, kMaxWgmmaCluster);
        const std::int64_t chunks = (k + kChunkK - 1) / kChunkK;
        if (shape.splits > 1) EXPECT_GE(chunks / shape.splits, kMinWgmmaChunksPerSplit);
      }
    }
  }
  // The measured winners at M = 64 on 132 SMs (bench/results/2026-11-30-h200-wgmma.md; 12288x4096:
  // 2026-12-01-h200-s14.md, call 8).
  const auto shape_of = [](std::int64_t n, std::int64_t k) {
    const WgmmaShape chosen = choose_wgmma_shape(64, n, k, 132);
    return std::array<int, 3>{chosen.warpgroups, chosen.splits, chosen.multicast};
  };
  EXPECT_EQ(shape_of(4096, 4096), (std::array<int, 3>{1, 2, 1}));
  EXPECT_EQ(shape_of(12288, 4096), (std::array<int, 3>{2, 1, 1}));
  EXPECT_EQ(shape_of(8448, 2048), (std::array<int, 3>{1, 1, 1}));  // 132 64-row CTAs: one per SM
  EXPECT_EQ(shape_of(8448, 4096), (std::array<int, 3>{2, 2, 1}));  // the paired split: 66 clusters of two
  EXPECT_EQ(shape_of(8512, 4096), (std::array<int, 3>{2, 1, 1}));
  EXPECT_EQ(shape_of(4096, 12288), (std::array<int, 3>{1, 2, 1}));
  EXPECT_EQ(shape_of(28672, 8192), (std::array<int, 3>{2, 1, 1}));
  // Unsplit 64-row CTAs of a long K become 128-row ones split in two (s15, call 6).
  EXPECT_EQ(shape_of(8192, 8192), (std::array<int, 3>{2, 2, 1}));
  EXPECT_EQ(shape_of(6144, 28672), (std::array<int, 3>{2, 2, 1}));
  EXPECT_EQ(shape_of(8192, 4096), (std::array<int, 3>{2, 2, 1}));
  EXPECT_EQ(shape_of(8192, 4096 - 64), (std::array<int, 3>{1, 1, 1}));  // 63 chunks
  EXPECT_EQ(shape_of(8448, 8192), (std::array<int, 3>{2, 2, 1}));  // 66 clusters of two: every SM
  // 127 SMs: 127 64-row CTAs fit, but 128 paired ones (64 row blocks x 2) would not.
  const WgmmaShape odd = choose_wgmma_shape(64, 8128, 4096, 127);
  EXPECT_EQ((std::array<int, 3>{odd.warpgroups, odd.splits, odd.multicast}), (std::array<int, 3>{1, 1, 1}));
  setenv("FP4GEMM_WGMMA_SHAPE", "2:9", 1);  // more splits than a portable cluster
  WgmmaShape shape{64, 2, 1};
  EXPECT_THROW(wgmma_shape_override(shape), Error);
  setenv("FP4GEMM_WGMMA_SHAPE", "2:4:4", 1);  // a cluster of 16
  EXPECT_THROW(wgmma_shape_override(shape), Error);
  setenv("FP4GEMM_WGMMA_SHAPE", "1:3", 1);  // the epilogue needs splits that are powers of two
  EXPECT_THROW(wgmma_shape_override(shape), Error);
  setenv("FP4GEMM_WGMMA_SHAPE", "2:1:3", 1);  // and so does the activation chunk's multicast
  EXPECT_THROW(wgmma_shape_override(shape), Error);
  setenv("FP4GEMM_WGMMA_SHAPE", "1:4", 1);
  EXPECT_TRUE(wgmma_shape_override(shape));
  EXPECT_EQ(shape.warpgroups, 1);
  EXPECT_EQ(shape.splits, 4);
  EXPECT_EQ(shape.multicast, 1);
  setenv("FP4GEMM_WGMMA_SHAPE", "2:2:4", 1);
  EXPECT_TRUE(wgmma_shape_override(shape));
  EXPECT_EQ(shape.multicast, 4);
  unsetenv("FP4GEMM_WGMMA_SHAPE");
}

#ifdef FP4GEMM_WITH_CUDA
// Every shape the rules can pick (mma.sync and wgmma) is one this build compiles, on GPUs of other
// SM counts too.
TEST(CudaDecodeTuning, EveryChosenShapeIsCompiled) {
  unsetenv("FP4GEMM_DECODE_SHAPE");
  unsetenv("FP4GEMM_WGMMA_SHAPE");
  for (int multiprocessors : {16, 78, 108, 132, 170}) {
    for (std::int64_t m = 1; m <= kMaxActivationRows; ++m) {
      for (std::int64_t n : {1, 16, 300, 4096, 12288, 28672, 65536, 151936}) {
        for (std::int64_t k : {16, 1040, 4096, 8192, 12288, 29568}) {
          for (bool programmatic : {true, false}) {
            const LaunchShape shape = choose_launch_shape(m, n, k, multiprocessors, programmatic);
            EXPECT_TRUE(is_compiled_shape(shape)) << m << "x" << n << "x" << k << " on " << multiprocessors << " SMs: "
                                                  << shape.m_tiles << " tiles, " << shape.warps_n << ":" << shape.warps_k << ":"
                                                  << shape.tiles_per_warp;
          }
          const WgmmaShape wgmma = choose_wgmma_shape(m, n, k, multiprocessors);
          EXPECT_TRUE(is_compiled_wgmma_shape(wgmma)) << m << "x" << n << "x" << k << " on " << multiprocessors << " SMs: "
                                                      << wgmma.tokens << " tokens, " << wgmma.warpgroups << ":" << wgmma.splits
                                                      << ":" << wgmma.multicast;
        }
      }
    }
  }
}

// The wgmma epilogue splits a CTA's rows evenly over its K splits, so only powers of two run.
TEST(CudaDecodeTuning, WgmmaSplitsThatAreNotAPowerOfTwoAreNotCompiled) {
  EXPECT_TRUE(is_compiled_wgmma_shape(WgmmaShape{64, 1, 4, 1}));
  EXPECT_FALSE(is_compiled_wgmma_shape(WgmmaShape{64, 1, 3, 1}));
  EXPECT_FALSE(is_compiled_wgmma_shape(WgmmaShape{64, 2, 6, 1}));
}
#endif

TEST(CudaDecodeTuning, TheShapeKnobTakesTilesPerWarpOptionally) {
  LaunchShape shape{2, 1, 4};
  EXPECT_EQ(shape.tiles_per_warp, 1);
  unsetenv("FP4GEMM_DECODE_SHAPE");
  EXPECT_FALSE(shape_override(shape));
  setenv("FP4GEMM_DECODE_SHAPE", "2:2", 1);
  EXPECT_TRUE(shape_override(shape));
  EXPECT_EQ(shape.warps_n, 2);
  EXPECT_EQ(shape.warps_k, 2);
  EXPECT_EQ(shape.tiles_per_warp, 1);
  setenv("FP4GEMM_DECODE_SHAPE", "1:8:2", 1);
  EXPECT_TRUE(shape_override(shape));
  EXPECT_EQ(shape.warps_n, 1);
  EXPECT_EQ(shape.warps_k, 8);
  EXPECT_EQ(shape.tiles_per_warp, 2);
  for (const char* bad : {"1", "0:4", "1:4:0", "x:y"}) {
    setenv("FP4GEMM_DECODE_SHAPE", bad, 1);
    EXPECT_THROW(shape_override(shape), Error) << bad;
  }
  unsetenv("FP4GEMM_DECODE_SHAPE");
}

}  // namespace
}  // namespace fp4gemm::cuda_decode
