// `cuda_decode`'s launch rules on the host: the mma.sync kernel's CTA shapes and their one-wave
// alternatives, the switch between its kernels, the wgmma and resident shapes, PDL, and the tuning
// knobs. (The weight layout and decode trick: cuda_decode_layout_test.cpp.)
#include <gtest/gtest.h>

#include <array>
#include <cstdlib>

#include "backends/cuda_decode/decode_layout.hpp"
#include "backends/cuda_decode/decode_tuning.hpp"
#include "backends/cuda_decode/resident_layout.hpp"
#ifdef FP4GEMM_WITH_CUDA
#include "backends/cuda_decode/sm90_decode_gemm.cuh"
#include "backends/cuda_decode/sm90_wgmma_gemm.cuh"
#endif
#include "fp4gemm/dispatch/preference.hpp"
#include "fp4gemm/error.hpp"
#include "support/test_support.hpp"

namespace fp4gemm::cuda_decode {
namespace {

constexpr int kH200Sms = 132;

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
        EXPECT_TRUE(warps == 4 || warps == kPairedFillWarpsK || warps == 8 || warps == kWideWarpsK ||
                    (shape.tiles_per_warp == 2 && (warps == kPairedWideWarpsK || warps == kPairedWiderWarpsK)))
            << warps;
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
  // 128 pairs x 8 = 1024 warps: too few for the usual splits, but one CTA of 16 K-warps per pair
  // covers the 132 SMs once (128 >= 0.84 x 132) and each warp streams 3 chunks or more
  EXPECT_EQ(shape_of(1, 4096, 12288), (Shape{1, 16, 2}));
  EXPECT_EQ(shape_of(1, 4096, 4096), (Shape{1, 16, 2}));   // 64 chunks: 4 per warp
  EXPECT_EQ(shape_of(1, 3840, 8192), (Shape{1, 16, 2}));   // 120 pairs
  EXPECT_EQ(shape_of(1, 4096, 14336), (Shape{1, 16, 2}));  // 224 chunks: 14 per warp
  EXPECT_EQ(shape_of(1, 4096, 16384), (Shape{1, 24, 2}));  // 256 chunks: 16 per warp at 16 ways, so 24
  EXPECT_EQ(shape_of(16, 4096, 16384), (Shape{1, 16, 2})); // two activation tiles: no 24-way kernel
  EXPECT_EQ(shape_of(1, 3584, 3584), (Shape{1, 16, 2}));   // 112 pairs: 0.85 of the SMs; 3.5 chunks a warp
  EXPECT_EQ(shape_of(1, 4096, 3072), (Shape{1, 16, 2}));   // 48 chunks: 3 per warp
  // Where the pairs' grid does not fit: 104 pairs cover under 0.84 of the SMs, 136 need two waves;
  // and under 3 chunks a warp. Then the single tiles split 12 ways (2 CTAs of 12 fill an SM's 24
  // resident warps) where that fills the GPU in one wave, else 8 (208 and 272 tiles here).
  EXPECT_EQ(shape_of(1, 3328, 4096), (Shape{1, 8, 1}));
  EXPECT_EQ(shape_of(1, 4352, 4096), (Shape{1, 8, 1}));
  EXPECT_EQ(shape_of(1, 4096, 2048), (Shape{1, 12, 1}));   // 32 chunks: 2 per warp at 16 ways
  EXPECT_EQ(shape_of(1, 4096, 512), (Shape{1, 8, 1}));     // 8 chunks: too few to split 12 ways
  EXPECT_EQ(shape_of(1, 4096, 1536), (Shape{1, 12, 1}));   // 24 chunks: 2 per warp
  EXPECT_EQ(shape_of(1, 4096, 1024), (Shape{1, 12, 1}));   // 16 chunks: 1-2 per warp suffice
  EXPECT_EQ(shape_of(4, 4096, 768), (Shape{1, 12, 1}));    // 12 chunks: one per warp
  EXPECT_EQ(shape_of(1, 4096, 704), (Shape{1, 8, 1}));     // 11 chunks: fewer than the warps
  // 128 and 96 tiles x 12 warps still fill under 0.9 of 24 warps x 132 SMs: 12 ways would not
  // take PDL and measured slower than 8
  EXPECT_EQ(shape_of(1, 2048, 4096), (Shape{1, 8, 1}));
  EXPECT_EQ(shape_of(1, 1536, 4096), (Shape{1, 8, 1}));
  EXPECT_EQ(shape_of(4, 4096, 12288), (Shape{1, 16, 2}));
  EXPECT_EQ(shape_of(16, 28672, 8192), (Shape{1, 4, 2}));
  // Two activation tiles split pairs at least 4 ways: 896 and 1184 pairs of 64 and 56 chunks would
  // have fed a 2-way split.
  EXPECT_EQ(shape_of(16, 28672, 4096), (Shape{1, 4, 2}));
  EXPECT_EQ(shape_of(16, 37888, 3584), (Shape{1, 4, 2}));
  EXPECT_EQ(shape_of(1, 28672, 4096), (Shape{1, 4, 2}));
  // 384 pairs x 4 = 1536 warps: 11 per SM suffice at two tiles, but 384 CTAs of 4 warps fill 0.73
  // of the 4 x 132 slots; 5 warps per CTA (3 per SM) fill 0.97
  EXPECT_EQ(shape_of(16, 12288, 4096), (Shape{1, 5, 2}));
  EXPECT_EQ(shape_of(9, 12288, 4096), (Shape{1, 5, 2}));
  EXPECT_EQ(shape_of(16, 14336, 4096), (Shape{1, 4, 2}));  // 448 pairs: more than 3 x 132, one wave no longer
  EXPECT_EQ(shape_of(8, 12288, 4096), (Shape{1, 8, 2}));   // one activation tile: 384 CTAs of 8 warps fill 0.97 already
  EXPECT_EQ(shape_of(16, 4096, 4096), (Shape{1, 16, 2}));
  EXPECT_EQ(shape_of(16, 4096, 2048), (Shape{1, 8, 1}));   // 32 chunks: 2 per warp at 16 ways
  EXPECT_EQ(shape_of(24, 28672, 8192), (Shape{1, 4, 1}));  // three activation tiles: one weight tile per warp
  EXPECT_EQ(shape_of(32, 12288, 4096), (Shape{2, 2, 1}));
  EXPECT_EQ(shape_of(64, 12288, 4096), (Shape{2, 4, 1}));  // eight tiles: a fixed shape
}

// The H200's occupancy of the compiled kernels (ptxas registers -> CTAs per SM; what
// decode_gemm_resident_ctas_per_sm answered there), for the wave rule on a host without a GPU.
int h200_resident_ctas_per_sm(const LaunchShape& shape) {
  const int warps = shape.warps_n * shape.warps_k;
  if (shape.m_tiles == 1) return shape.tiles_per_warp == 2 && warps == 4 ? 7 : 24 / warps;  // 72 and 80 registers
  if (is_many_tile_pair(shape)) return (shape.m_tiles == 3 ? 12 : 8) / warps;  // 159-162 and 171
  if (shape.m_tiles == 2 || shape.m_tiles == 3 || shape.register_bounded) return 16 / warps;  // 126-128 registers
  return shape.m_tiles == 4 ? 12 / warps : 14 / warps;                                         // 138 and 143
}

// The same without the tile pairs of three and four activation tiles (occupancy unknown: never
// taken), for the rules they come before (ThreeAndFourActivationTilesTakeTilePairs... tests them).
int h200_resident_ctas_per_sm_without_many_tile_pairs(const LaunchShape& shape) {
  return is_many_tile_pair(shape) ? 0 : h200_resident_ctas_per_sm(shape);
}

// The same without the register-bounded four-tile kernel either.
int h200_unbounded_resident_ctas_per_sm(const LaunchShape& shape) {
  return shape.register_bounded ? 0 : h200_resident_ctas_per_sm_without_many_tile_pairs(shape);
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
      EXPECT_EQ(fields_of(choose_launch_shape(m, n, k, 132, true, h200_resident_ctas_per_sm_without_many_tile_pairs)),
                fields_of(choose_launch_shape(m, n, k, 132, true)))
          << m << "x" << n << "x" << k;
    }
  }
}

TEST(CudaDecodeTuning, ThreeAndFourActivationTilesTakeCtasOfTwiceTheRowsWhereTheRulesGridTakesUpToTwoWaves) {
  using Shape = std::array<int, 3>;
  // The unbounded four-tile kernel alone (the bounded one: FourActivationTilesTakeTheRegisterBoundedKernel...).
  const auto shape_of = [](std::int64_t m, std::int64_t n, std::int64_t k) {
    return fields_of(choose_launch_shape(m, n, k, 132, true, h200_unbounded_resident_ctas_per_sm));
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
  // 5120 rows: 2.42 waves, and row pairs would still take 1.21 (they lost, s16); half the K split in
  // 4-warp CTAs, three per SM, fits one (FourActivationTilesPastTwoWavesHalveTheKSplit).
  EXPECT_EQ(shape_of(32, 5120, 4096), (Shape{1, 4, 1}));
  // One wave already: unchanged.
  EXPECT_EQ(shape_of(32, 2048, 4096), (Shape{1, 8, 1}));
  // Three tiles at 1.58 waves: 13312x8192 M = 20, 832 CTAs of 1x4 at four per SM (its wgmma grid
  // of 104 CTAs is under 80% of the SMs, so it stays on mma.sync).
  EXPECT_EQ(shape_of(20, 13312, 8192), (Shape{2, 2, 1}));
  // Fewer tiles have no row pairs, even where the grid takes 1.5-2 waves: at one CTA per SM,
  // M = 16 on 4096x2048 runs 256 CTAs of 1x8 warps in 1.94 waves and keeps them.
  const auto one_per_sm = [](const LaunchShape& shape) { return is_many_tile_pair(shape) ? 0 : 1; };
  EXPECT_EQ(fields_of(choose_launch_shape(16, 4096, 2048, 132, true, one_per_sm)), (Shape{1, 8, 1}));
  EXPECT_EQ(fields_of(choose_launch_shape(32, 4096, 4096, 132, true, one_per_sm)), (Shape{2, 4, 1}));
}

TEST(CudaDecodeTuning, FourActivationTilesPastTwoWavesHalveTheKSplit) {
  using Shape = std::array<int, 4>;
  const auto shape_of = [](std::int64_t m, std::int64_t n, std::int64_t k) {
    const LaunchShape shape = choose_launch_shape(m, n, k, 132, true, h200_resident_ctas_per_sm);
    return Shape{shape.warps_n, shape.warps_k, shape.tiles_per_warp, int(shape.register_bounded)};
  };
  // 272-288 CTAs of 1x8 at one per SM (2.06-2.18 waves) -> 1x4 at three per SM (1.37-1.45), ahead of
  // the register-bounded 1x8 (s26, call 8: 4352x4096 10.97 against 14.04 and 12.04 us).
  EXPECT_EQ(shape_of(32, 4352, 4096), (Shape{1, 4, 1, 0}));
  EXPECT_EQ(shape_of(25, 4608, 3584), (Shape{1, 4, 1, 0}));
  EXPECT_EQ(shape_of(32, 4608, 8192), (Shape{1, 4, 1, 0}));
  EXPECT_EQ(shape_of(32, 5632, 4096), (Shape{1, 4, 1, 0}));
  // Not where 1x4 would leave a warp more than kChunksPerWarp chunks, nor under two waves.
  EXPECT_NE(shape_of(32, 4608, 16384), (Shape{1, 4, 1, 0}));
  EXPECT_NE(shape_of(32, 4096, 4096), (Shape{1, 4, 1, 0}));  // 1.94 waves
}

TEST(CudaDecodeTuning, FourActivationTilesTakeTheRegisterBoundedKernelWhereItsGridKeepsMoreWarpsPerSm) {
  using Shape = std::array<int, 4>;
  // Without tile pairs, which take 4096 rows first (ThreeAndFourActivationTilesTakeTilePairs...).
  const auto shape_of = [](std::int64_t m, std::int64_t n, std::int64_t k) {
    const LaunchShape shape = choose_launch_shape(m, n, k, 132, true, h200_resident_ctas_per_sm_without_many_tile_pairs);
    EXPECT_EQ(shape.m_tiles, activation_tiles(m));
    return Shape{shape.warps_n, shape.warps_k, shape.tiles_per_warp, int(shape.register_bounded)};
  };
  // The measured winners (H200, every compiled shape forced): 256 CTAs of 1x8 at two
  // per SM (15.5 warps) against 128 of 2x4 at one (7.8).
  for (std::int64_t m : {25, 32}) {
    EXPECT_EQ(shape_of(m, 4096, 12288), (Shape{1, 8, 1, 1})) << m;
    EXPECT_EQ(shape_of(m, 4096, 4096), (Shape{1, 8, 1, 1})) << m;
    EXPECT_EQ(shape_of(m, 3072, 4096), (Shape{1, 8, 1, 1})) << m;  // 11.6 warps against 1x4's 5.8
    EXPECT_EQ(shape_of(m, 5120, 12288), (Shape{1, 4, 1, 1})) << m;  // 9.7 against 8 (1x8 at 2.42 waves)
    // ... but where the unbounded 1x8 grid takes more than two waves and 1x4 keeps at most 32 chunks
    // a warp, the unbounded 1x4 comes first (s26, call 7: 5120x8192 19.32 against 19.60 us).
    EXPECT_EQ(shape_of(m, 5120, 4096), (Shape{1, 4, 1, 0})) << m;
    // The measured losers: the same grid's warps either way (s16 call 8, s17 call 2).
    EXPECT_EQ(shape_of(m, 12288, 4096), (Shape{2, 2, 1, 0})) << m;
    EXPECT_EQ(shape_of(m, 2048, 8192), (Shape{1, 8, 1, 0})) << m;
    EXPECT_EQ(shape_of(m, 6144, 4096), (Shape{1, 4, 1, 0})) << m;
    EXPECT_EQ(shape_of(m, 10240, 8192), (Shape{2, 2, 1, 0})) << m;
    EXPECT_EQ(shape_of(m, 12288, 8192), (Shape{2, 2, 1, 0})) << m;
  }
  // Twice the warps, but 4 chunks a warp: lost by 2-5% (s17, call 2).
  EXPECT_EQ(shape_of(25, 4096, 2048), (Shape{2, 4, 1, 0}));
  EXPECT_EQ(shape_of(25, 4096, 4096 - 64), (Shape{2, 4, 1, 0}));  // 63 chunks: 7 a warp
  // Fewer tiles have no bounded kernel; nor does a simulated GPU (no occupancy).
  EXPECT_FALSE(choose_launch_shape(24, 4096, 12288, 132, true, h200_resident_ctas_per_sm).register_bounded);
  EXPECT_FALSE(choose_launch_shape(32, 4096, 12288, 132, true).register_bounded);
}

TEST(CudaDecodeTuning, ThreeAndFourActivationTilesTakeTilePairsWhereTheyFitOneWaveWithEnoughWarps) {
  using Shape = std::array<int, 3>;
  const auto shape_of = [](std::int64_t m, std::int64_t n, std::int64_t k) {
    return fields_of(choose_launch_shape(m, n, k, 132, true, h200_resident_ctas_per_sm));
  };
  // The measured winners (H200, every compiled shape forced): 128 CTAs of 1x8x2 at one
  // per SM (7.8 warps); 256 and 384 CTAs of 1x4x2 (7.8 and 11.6); 256 CTAs of 2x2x2 on 16384 rows.
  for (std::int64_t m : {24, 25, 32}) {
    EXPECT_EQ(shape_of(m, 4096, 4096), (Shape{1, 8, 2})) << m;
    EXPECT_EQ(shape_of(m, 4096, 12288), (Shape{1, 8, 2})) << m;
  }
  EXPECT_EQ(shape_of(24, 8192, 8192), (Shape{1, 4, 2}));
  EXPECT_EQ(shape_of(24, 12288, 4096), (Shape{1, 4, 2}));
  EXPECT_EQ(shape_of(24, 16384, 4096), (Shape{2, 2, 2}));
  // The losers: one wave only at 4.4-5.8 warps per SM (4608 and 6144 rows), or 1.45 waves (12288
  // rows at four tiles, 8 warps per SM).
  for (std::int64_t m : {24, 32}) {
    EXPECT_EQ(choose_launch_shape(m, 4608, 3584, 132, true, h200_resident_ctas_per_sm).tiles_per_warp, 1) << m;
    EXPECT_EQ(choose_launch_shape(m, 6144, 4096, 132, true, h200_resident_ctas_per_sm).tiles_per_warp, 1) << m;
  }
  EXPECT_EQ(choose_launch_shape(32, 12288, 4096, 132, true, h200_resident_ctas_per_sm).tiles_per_warp, 1);
  // Below kMinManyTilePairsM rows only grids of 9.5 warps per SM or more (call 4): 12288x4096's
  // 11.6 and 10240x8192's 9.7, not the 7.8 of 4096, 8192 and 16384 rows.
  for (std::int64_t m : {17, 19}) {
    EXPECT_EQ(shape_of(m, 12288, 4096), (Shape{1, 4, 2})) << m;
    EXPECT_EQ(shape_of(m, 10240, 8192), (Shape{1, 4, 2})) << m;
    for (std::int64_t n : {4096, 8192, 16384})
      EXPECT_EQ(choose_launch_shape(m, n, 8192, 132, true, h200_resident_ctas_per_sm).tiles_per_warp, 1) << m << " " << n;
  }
  EXPECT_EQ(shape_of(20, 8192, 8192), (Shape{1, 4, 2}));
  // Without the occupancy (a simulated GPU), none.
  EXPECT_EQ(choose_launch_shape(24, 12288, 4096, 132, true).tiles_per_warp, 1);
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
  // The measured winners and losers from M = 33 (H200, mma.sync and wgmma each forced).
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
  // M = 25-32: where two warpgroups per CTA cover 80% of the SMs (H200, both kernels forced).
  EXPECT_TRUE(wgmma(32, 28672, 8192, 90));  // 224 CTAs
  EXPECT_TRUE(wgmma(25, 16384, 2048, 90));  // 128
  EXPECT_TRUE(wgmma(32, 14336, 4096, 90));  // 112
  EXPECT_TRUE(wgmma(25, 8192, 4096, 90));   // 128 (64 two-CTA clusters)
  EXPECT_TRUE(wgmma(32, 8192, 8192, 90));
  EXPECT_TRUE(wgmma(32, 8448, 8192, 90));   // 132
  EXPECT_TRUE(wgmma(32, 6912, 4096, 90));   // 108: wgmma by 13%
  EXPECT_TRUE(wgmma(32, 7168, 8192, 90));   // 112: wgmma by 22%
  EXPECT_FALSE(wgmma(32, 6144, 8192, 90));   // 96: mma.sync by 15-23%
  EXPECT_FALSE(wgmma(32, 6144, 4096, 90));   // 48: mma.sync by 31% (s26, call 7)
  EXPECT_FALSE(wgmma(32, 8192, 3584, 90));   // under 4096 columns: mma.sync by 23% (s26, call 7)
  // From 9216 rows and 4096 columns, whatever the data-parallel fill: the stream-K grid (session
  // 20) runs two CTAs per SM there (s26, calls 7-8: wgmma by 9-19%; 12288x4096 a tie, s21 call 5).
  EXPECT_TRUE(wgmma(32, 9216, 4096, 90));
  EXPECT_TRUE(wgmma(25, 10240, 5120, 90));
  EXPECT_TRUE(wgmma(32, 11264, 5120, 90));
  EXPECT_TRUE(wgmma(32, 12288, 4096, 90));
  EXPECT_FALSE(wgmma(24, 10240, 5120, 90));  // three activation tiles: mma.sync by 5% (s26, call 8)
  // 96 and 80 CTAs unsplit lost by 1-11%; K split in two (kWgmmaIdleSplitMinChunks) they are 192
  // and 160 CTAs (s17, call 2).
  EXPECT_TRUE(wgmma(32, 12288, 8192, 90));
  EXPECT_TRUE(wgmma(25, 10240, 8192, 90));
  EXPECT_FALSE(wgmma(32, 4096, 12288, 90));  // 128 CTAs of one warpgroup: mma.sync by 16%
  EXPECT_FALSE(wgmma(25, 16384, 1024, 90));  // K below 2048
  // M = 17-24: the three-tile kernel, except on tall weights (call 9; s14 call 10).
  EXPECT_FALSE(wgmma(24, 7168, 8192, 90));   // mma.sync by 13-21%
  EXPECT_FALSE(wgmma(17, 6912, 4096, 90));   // mma.sync by 25%
  EXPECT_FALSE(wgmma(24, 8192, 28672, 90));
  EXPECT_FALSE(wgmma(24, 13312, 8192, 90));  // mma.sync by 2-14%
  EXPECT_FALSE(wgmma(17, 14336, 4096, 90));  // mma.sync by 4-15% (s17, call 1)
  EXPECT_FALSE(wgmma(17, 14336, 2048, 90));  // by 8-19%
  // Before two stream-K CTAs per SM, mma.sync won 20480x4096 M = 20 by 1-8% and 24576x8192 M = 24
  // by 6-20% (s17, call 4); since, wgmma wins both (s21, calls 5-6: 0.84 and 0.90).
  EXPECT_TRUE(wgmma(20, 20480, 4096, 90));
  EXPECT_TRUE(wgmma(24, 24576, 8192, 90));
  EXPECT_FALSE(wgmma(20, 20480, 2048, 90));  // 2048 K below 28672 rows: mma.sync by 1-9% (s21)
  EXPECT_TRUE(wgmma(17, 28672, 8192, 90));   // wgmma by 7%
  EXPECT_TRUE(wgmma(24, 28672, 8192, 90));   // by 19%
  EXPECT_TRUE(wgmma(17, 28672, 4096, 90));   // by 4-15% (call 4)
  EXPECT_TRUE(wgmma(20, 28672, 2048, 90));   // by 4-14%
  EXPECT_FALSE(wgmma(17, 16384, 1024, 90));  // K below 2048: mma.sync by 4%
  EXPECT_FALSE(wgmma(16, 28672, 8192, 90));
  EXPECT_FALSE(wgmma(16, 8192, 8192, 90));   // mma.sync by 45% at M = 16
  // The bounds themselves.
  EXPECT_TRUE(wgmma(kWgmmaMinM, kWgmmaMinN, 16, 90));
  EXPECT_FALSE(wgmma(kWgmmaMinM - 1, kWgmmaMinN, 16, 90));
  EXPECT_TRUE(wgmma(kWgmmaMinM, 4096, kWgmmaMinElements / 4096, 90));
  EXPECT_FALSE(wgmma(kWgmmaMinM, 4096, kWgmmaMinElements / 4096 - 16, 90));
  // 8192 rows: 64 clusters of two CTAs once K holds the paired split's chunks.
  constexpr std::int64_t kPairedK = kWgmmaPairedSplitMinChunks * kChunkK;
  EXPECT_TRUE(wgmma(kWgmmaFilledMinM, 8192, kPairedK, 90));
  EXPECT_FALSE(wgmma(kWgmmaFilledMinM, 8192, kPairedK - kChunkK, 90));  // 128 CTAs of one warpgroup
  EXPECT_FALSE(wgmma(kWgmmaFilledMinM - 1, 8192, kPairedK, 90));
  EXPECT_FALSE(wgmma(kWgmmaFilledMinM, 16384, kWgmmaFilledMinK - 16, 90));
  EXPECT_TRUE(wgmma(kWgmmaFilledMinM, 16384, kWgmmaFilledMinK, 90));
  // The fill bound: 106 CTAs of 128 rows are 80.3% of 132 SMs, 105 are 79.5%.
  // (At 2048 columns: from 4096, 9216 rows and more run wgmma anyway, kWgmmaMidStreamMinN.)
  EXPECT_TRUE(wgmma(kWgmmaFilledMinM, 106 * 128, 2048, 90));
  EXPECT_FALSE(wgmma(kWgmmaFilledMinM, 105 * 128, 2048, 90));
  EXPECT_TRUE(wgmma(kWgmmaFilledMinM, kWgmmaMidStreamMinN, kWgmmaMidStreamMinK, 90));
  EXPECT_FALSE(wgmma(kWgmmaFilledMinM, kWgmmaMidStreamMinN - 128, kWgmmaMidStreamMinK, 90));
  EXPECT_FALSE(wgmma(kWgmmaFilledMinM, kWgmmaMidStreamMinN, kWgmmaMidStreamMinK - 64, 90));
  EXPECT_FALSE(wgmma(kWgmmaFilledMinM - 1, kWgmmaMidStreamMinN, kWgmmaMidStreamMinK, 90));
  EXPECT_EQ(choose_decode_kernel(kWgmmaFilledMinM, kWgmmaMidStreamMinN, kWgmmaMidStreamMinK, 90, 0), DecodeKernel::mma);
  EXPECT_TRUE(wgmma_grid_fills_sms(kWgmmaFilledMinM, 8192, 8192, kH200Sms));
  EXPECT_FALSE(wgmma_grid_fills_sms(kWgmmaFilledMinM, 8192, 8192, 0));  // SMs unknown: mma.sync
  EXPECT_EQ(choose_decode_kernel(kWgmmaFilledMinM, 8192, 8192, 90, 0), DecodeKernel::mma);
  // The tall bound (M = 17-24).
  EXPECT_TRUE(wgmma(kWgmmaTallMinM, kWgmmaTallMinN, kWgmmaTallMinK, 90));
  EXPECT_FALSE(wgmma(kWgmmaTallMinM - 1, kWgmmaTallMinN, kWgmmaTallMinK, 90));
  EXPECT_FALSE(wgmma(kWgmmaTallMinM, kWgmmaTallMinN - 1, kWgmmaTallMinK, 90));
  EXPECT_FALSE(wgmma(kWgmmaTallMinM, kWgmmaTallMinN, kWgmmaTallMinK - 16, 90));
  EXPECT_TRUE(wgmma(kWgmmaTallMinM, kWgmmaTallStreamMinN, kWgmmaTallStreamMinK, 90));  // two stream-K CTAs per SM
  EXPECT_TRUE(wgmma(kWgmmaFilledMinM - 1, kWgmmaTallStreamMinN, kWgmmaTallStreamMinK, 90));
  EXPECT_FALSE(wgmma(kWgmmaTallMinM - 1, kWgmmaTallStreamMinN, kWgmmaTallStreamMinK, 90));
  EXPECT_FALSE(wgmma(kWgmmaTallMinM, kWgmmaTallStreamMinN - 1, kWgmmaTallStreamMinK, 90));
  EXPECT_FALSE(wgmma(kWgmmaTallMinM, kWgmmaTallStreamMinN, kWgmmaTallStreamMinK - 16, 90));
  EXPECT_FALSE(wgmma(kWgmmaTallMinM, 16384, 8192, 90));  // one CTA per SM: mma.sync by 7-21%
  setenv("FP4GEMM_DECODE_KERNEL", "wgmma", 1);
  EXPECT_TRUE(wgmma(1, 16, 16, 90));
  EXPECT_FALSE(wgmma(1, 16, 16, 80));  // never on another GPU
  setenv("FP4GEMM_DECODE_KERNEL", "mma", 1);
  EXPECT_FALSE(wgmma(64, 28672, 8192, 90));
  setenv("FP4GEMM_DECODE_KERNEL", "tensor", 1);
  EXPECT_THROW(wgmma(64, 28672, 8192, 90), Error);
  unsetenv("FP4GEMM_DECODE_KERNEL");
}

// Where the kernel rules pick wgmma at M <= 32, tile pairs that fit one wave run instead where
// wgmma's grid splits K and each pair warp streams at most kPairsAheadOfWgmmaMaxChunksPerWarp
// chunks, against a stream-K grid with kMinPairsAheadOfStreamKWarpsPerSm warps per SM
// (H200: pairs 0.90-0.97 of wgmma's time where taken), and choose_launch_shape then takes exactly those
// pairs.
TEST(CudaDecodeTuning, TilePairsThatFitOneWaveRunAheadOfAWgmmaGridThatSplitsK) {
  unsetenv("FP4GEMM_DECODE_KERNEL");
  unsetenv("FP4GEMM_DECODE_SHAPE");
  unsetenv("FP4GEMM_WGMMA_SHAPE");
  const ResidentCtasPerSm h200 = h200_resident_ctas_per_sm;
  const auto kernel = [&](std::int64_t m, std::int64_t n, std::int64_t k) { return choose_decode_kernel(m, n, k, 90, kH200Sms, h200); };
  for (std::int64_t m : {25, 28, 32}) {
    EXPECT_EQ(choose_decode_kernel(m, 8192, 8192, 90, kH200Sms), DecodeKernel::wgmma) << m;  // occupancy unknown
    // The winners: wgmma split 2 ways on 8192 rows (0.80-0.97), up to 96 chunks per pair warp.
    for (std::int64_t k : {4096, 8192, 14336, 20480, 24576}) EXPECT_EQ(kernel(m, 8192, k), DecodeKernel::mma) << m << " " << k;
    // The losers: 112 chunks per warp (K = 28672, 1.02 on the H100), and 16384 rows, where wgmma's 128
    // CTAs take the whole K (1.03-1.07).
    EXPECT_EQ(kernel(m, 8192, 28672), DecodeKernel::wgmma) << m;
    EXPECT_EQ(kernel(m, 16384, 4096), DecodeKernel::wgmma) << m;
    EXPECT_EQ(kernel(m, 16384, 8192), DecodeKernel::wgmma) << m;
    // No pair grid fits one wave: 12288 rows take 1.45 waves at four tiles, 28672 more.
    EXPECT_EQ(kernel(m, 12288, 4096), DecodeKernel::wgmma) << m;
    EXPECT_EQ(kernel(m, 28672, 8192), DecodeKernel::wgmma) << m;
  }
  // Three tiles against the tall band's stream-K wgmma where the pairs keep 9.5 warps per SM or
  // more: 9.7 on 20480 rows, 10.7 on 22528, 11.6 on 24576 (0.75-0.99) ...
  for (std::int64_t m : {17, 20, 24}) {
    EXPECT_EQ(kernel(m, 20480, 8192), DecodeKernel::mma) << m;
    EXPECT_EQ(kernel(m, 22528, 8192), DecodeKernel::mma) << m;
    EXPECT_EQ(kernel(m, 24576, 4096), DecodeKernel::mma) << m;
    // ... not 8.7 on 18432 rows (1.02-1.09 from K = 8192 on the H200).
    EXPECT_EQ(kernel(m, 18432, 4096), DecodeKernel::wgmma) << m;
    EXPECT_EQ(kernel(m, 18432, 8192), DecodeKernel::wgmma) << m;
  }
  // ... and up to 96 chunks per pair warp (2x2x2 splits K two ways): 24576x12288 won (0.87); at
  // 112-160 chunks 20480 rows lost 0-4% and 18432 rows 9%, so 24576x14336 (0.85) is given up too.
  EXPECT_EQ(kernel(24, 24576, 12288), DecodeKernel::mma);
  EXPECT_EQ(kernel(24, 20480, 14336), DecodeKernel::wgmma);
  EXPECT_EQ(kernel(24, 24576, 14336), DecodeKernel::wgmma);
  EXPECT_EQ(choose_decode_kernel(48, 8192, 8192, 90, kH200Sms, h200), DecodeKernel::wgmma);  // no pairs above M = 32
  EXPECT_EQ(choose_decode_kernel(32, 8192, 8192, 80, kH200Sms, h200), DecodeKernel::mma);
  // Wherever the occupancy turns wgmma into mma.sync, the launch shape is the tile pairs.
  int turned = 0;
  for (std::int64_t m = 17; m <= 32; ++m)
    for (std::int64_t n : {4096, 8192, 12288, 16384, 18432, 20480, 24576, 28672})
      for (std::int64_t k : {2048, 4096, 8192, 14336}) {
        if (choose_decode_kernel(m, n, k, 90, kH200Sms) != DecodeKernel::wgmma) continue;
        if (choose_decode_kernel(m, n, k, 90, kH200Sms, h200) != DecodeKernel::mma) continue;
        ++turned;
        EXPECT_TRUE(is_many_tile_pair(choose_launch_shape(m, n, k, kH200Sms, true, h200))) << m << "x" << n << "x" << k;
      }
  EXPECT_GT(turned, 0);
  setenv("FP4GEMM_DECODE_KERNEL", "wgmma", 1);
  EXPECT_EQ(choose_decode_kernel(32, 8192, 8192, 90, kH200Sms, h200), DecodeKernel::wgmma);  // the knob still rules
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
  // The data-parallel grid's measured winners at M = 64 on 132 SMs (H200, every grid forced).
  const auto shape_of = [](std::int64_t n, std::int64_t k) {
    const WgmmaShape chosen = choose_data_parallel_wgmma_shape(64, n, k, 132);
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
  // Unsplit 128-row CTAs that leave a fifth of the SMs idle split a long K in two (s17, call 1).
  EXPECT_EQ(shape_of(10240, 8192), (std::array<int, 3>{2, 2, 1}));   // 80 CTAs
  EXPECT_EQ(shape_of(12288, 8192), (std::array<int, 3>{2, 2, 1}));   // 96
  EXPECT_EQ(shape_of(12288, 8192 - 64), (std::array<int, 3>{2, 1, 1}));  // 127 chunks
  EXPECT_EQ(shape_of(14336, 8192), (std::array<int, 3>{2, 2, 1}));   // 112 CTAs (s17, call 4)
  EXPECT_EQ(shape_of(15104, 8192), (std::array<int, 3>{2, 2, 1}));   // 118: 89.4% of the SMs
  EXPECT_EQ(shape_of(15232, 8192), (std::array<int, 3>{2, 1, 1}));   // 119: 90.2%
  EXPECT_EQ(shape_of(28672, 8192), (std::array<int, 3>{2, 1, 1}));
  // 127 SMs: 127 64-row CTAs fit, but 128 paired ones (64 row blocks x 2) would not.
  const WgmmaShape odd = choose_data_parallel_wgmma_shape(64, 8128, 4096, 127);
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
  setenv("FP4GEMM_WGMMA_STREAM", "132", 1);  // a stream-K grid is never clustered
  EXPECT_THROW(wgmma_shape_override(shape), Error);
  setenv("FP4GEMM_WGMMA_SHAPE", "1:1", 1);
  EXPECT_TRUE(wgmma_shape_override(shape));
  EXPECT_EQ((std::array<int, 4>{shape.warpgroups, shape.splits, shape.multicast, shape.stream_ctas}), (std::array<int, 4>{1, 1, 1, 132}));
  unsetenv("FP4GEMM_WGMMA_SHAPE");
  shape = WgmmaShape{64, 1, 2};  // the rule's CTAs and K split give way to the stream-K grid's
  EXPECT_TRUE(wgmma_shape_override(shape));
  EXPECT_EQ((std::array<int, 4>{shape.warpgroups, shape.splits, shape.multicast, shape.stream_ctas}),
            (std::array<int, 4>{kStreamKWarpgroups, 1, 1, 132}));
  for (const char* bad : {"-1", "many", "70000"}) {
    setenv("FP4GEMM_WGMMA_STREAM", bad, 1);
    EXPECT_THROW(wgmma_shape_override(shape), Error) << bad;
  }
  setenv("FP4GEMM_WGMMA_STREAM", "0", 1);  // off: the rule's grid
  EXPECT_TRUE(wgmma_shape_override(shape));
  EXPECT_EQ(shape.stream_ctas, 0);
  // The shape that runs: with FP4GEMM_WGMMA_STREAM=0 alone, the rule's data-parallel grid (4096x12288:
  // 64-row CTAs, K split in two), not the stream-K grid's CTAs unstreamed.
  bool overridden = false;
  const WgmmaShape data_parallel = wgmma_shape_to_run(64, 4096, 12288, 132, overridden);
  EXPECT_TRUE(overridden);
  EXPECT_EQ((std::array<int, 4>{data_parallel.warpgroups, data_parallel.splits, data_parallel.multicast, data_parallel.stream_ctas}),
            (std::array<int, 4>{1, 2, 1, 0}));
  unsetenv("FP4GEMM_WGMMA_STREAM");
  const WgmmaShape ruled = wgmma_shape_to_run(64, 4096, 12288, 132, overridden);
  EXPECT_FALSE(overridden);
  EXPECT_EQ(ruled.stream_ctas, 132);
}

// Where the stream-K grid replaces the data-parallel one on 132 SMs (wgmma_tuning.hpp,
// kWgmmaStreamMaxFill, measured on the H200), at every token width.
TEST(CudaDecodeTuning, StreamKGridWhereTheDataParallelOneLeavesSmsIdle) {
  unsetenv("FP4GEMM_WGMMA_SHAPE");
  unsetenv("FP4GEMM_WGMMA_STREAM");
  for (std::int64_t m : {17, 33, 64}) {
    const int per_sm = stream_k_ctas_per_sm(m <= 32 ? 32 : 64);
    const auto streamed = [&](std::int64_t n, std::int64_t k) {
      const WgmmaShape shape = choose_wgmma_shape(m, n, k, 132);
      if (shape.stream_ctas > 0) {
        // Two per SM where each still gets kWgmmaStreamMinChunksPerCta chunks, else one.
        const std::int64_t units = (n + 127) / 128 * ((k + 63) / 64);
        const int ctas = units >= std::int64_t(kWgmmaStreamMinChunksPerCta) * 132 * per_sm ? 132 * per_sm : 132;
        EXPECT_EQ((std::array<int, 4>{shape.warpgroups, shape.splits, shape.multicast, shape.stream_ctas}),
                  (std::array<int, 4>{kStreamKWarpgroups, 1, 1, ctas}))
            << n << "x" << k;
      }
      return shape.stream_ctas > 0;
    };
    EXPECT_TRUE(streamed(12288, 4096)) << m;   // 96 CTAs on 132 SMs: 73%
    EXPECT_TRUE(streamed(10240, 8192)) << m;   // 160 (K split in two) on 264 slots: 61%
    EXPECT_TRUE(streamed(5120, 4096)) << m;    // 80 paired CTAs: 61% (40 x 64 chunks: one stream-K CTA per SM)
    EXPECT_TRUE(streamed(24576, 4096)) << m;   // 192 on 264 slots: 73%
    EXPECT_TRUE(streamed(4096, 12288)) << m;   // one warpgroup per SM over 192 chunks
    EXPECT_FALSE(streamed(4096, 4096)) << m;   // ... over 64 chunks
    EXPECT_FALSE(streamed(8192, 8192)) << m;   // 128 CTAs: 97%
    EXPECT_FALSE(streamed(16384, 4096)) << m;  // 128
    // 224 on 264 slots (85%): two CTAs on 92 SMs, one on 40. Stream-K where its CTAs fit two per
    // SM (32 tokens), not where they fit one (64).
    EXPECT_EQ(streamed(14336, 8192), per_sm == 2) << m;
    EXPECT_EQ(streamed(28672, 8192), per_sm == 2) << m;
    EXPECT_EQ(streamed(57344, 8192), per_sm == 2) << m;  // 448 on 528 slots: 85%
    EXPECT_FALSE(streamed(33792, 8192)) << m;            // 264 on 264
    EXPECT_FALSE(streamed(12288, 512)) << m;   // 96 x 8 chunks: fewer than 16 a CTA
  }
  EXPECT_EQ(stream_k_ctas_per_sm(16), 2);
  EXPECT_EQ(stream_k_ctas_per_sm(32), 2);
  EXPECT_EQ(stream_k_ctas_per_sm(64), 1);
  EXPECT_FALSE(choose_wgmma_shape(64, 12288, 4096, 0).stream_ctas > 0);  // the SM count unknown
}

// The stream-K partition of a shape: its row blocks are the grid's rows, and it never has more
// CTAs than (row block, chunk) pairs.
TEST(CudaDecodeTuning, StreamPartitionOfAShape) {
  const StreamKPartition partition = wgmma_stream_partition(WgmmaShape{64, 2, 1, 1, 132}, 12288, 4096);
  EXPECT_EQ(partition.row_blocks, 96);
  EXPECT_EQ(partition.chunks, 64);
  EXPECT_EQ(partition.ctas, 132);
  const StreamKPartition tiny = wgmma_stream_partition(WgmmaShape{16, 1, 1, 1, 132}, 7, 1040);
  EXPECT_EQ(tiny.row_blocks, 1);
  EXPECT_EQ(tiny.chunks, 17);
  EXPECT_EQ(tiny.ctas, 17);
  EXPECT_EQ(wgmma_stream_partition(WgmmaShape{64, 2, 1}, 12288, 4096).ctas, 0);  // no stream-K grid
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
            // The size rule's shape, and the one-wave alternatives at the H200's occupancy; like
            // decode_gemm_resident_ctas_per_sm, the occupancy of a shape not compiled is 0.
            const ResidentCtasPerSm h200 = [](const LaunchShape& shape) {
              return is_compiled_shape(shape) ? h200_resident_ctas_per_sm(shape) : 0;
            };
            for (const ResidentCtasPerSm& occupancy : {ResidentCtasPerSm(), h200}) {
              const LaunchShape shape = choose_launch_shape(m, n, k, multiprocessors, programmatic, occupancy);
              EXPECT_TRUE(is_compiled_shape(shape)) << m << "x" << n << "x" << k << " on " << multiprocessors << " SMs: "
                                                    << shape.m_tiles << " tiles, " << shape.warps_n << ":" << shape.warps_k << ":"
                                                    << shape.tiles_per_warp << ":" << int(shape.register_bounded);
            }
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

// Weights of few rows at M <= 16 split K over clusters (decode_tuning.hpp, kClusteredWarpsK), as
// measured on the H200 (512x8192 M = 1 5.98 -> ~3.2 us); the rows where clusters lost
// keep the unclustered rule, and so do three or more activation tiles.
TEST(CudaDecodeTuning, FewRowWeightsSplitKOverClusters) {
  const auto cluster_of = [](std::int64_t m, std::int64_t n, std::int64_t k) {
    const LaunchShape shape = choose_launch_shape(m, n, k, 132, true, h200_resident_ctas_per_sm);
    return shape.cluster_k;
  };
  EXPECT_EQ(cluster_of(1, 512, 8192), 8);
  EXPECT_EQ(cluster_of(8, 512, 8192), 8);
  EXPECT_EQ(cluster_of(1, 512, 4096), 4);
  EXPECT_EQ(cluster_of(1, 256, 4096), 4);
  EXPECT_EQ(cluster_of(1, 1024, 4096), 4);
  EXPECT_EQ(cluster_of(1, 1024, 8192), 4);   // 8 would take 512 CTAs, over two per SM
  EXPECT_EQ(cluster_of(1, 1024, 2048), 1);   // K = 2048: clusters lost
  EXPECT_EQ(cluster_of(1, 1536, 4096), 1);   // 96 CTAs: over half of the SMs
  EXPECT_EQ(cluster_of(1, 2048, 8192), 1);
  EXPECT_EQ(cluster_of(16, 512, 8192), 4);   // two activation tiles: at most 1.5 CTAs per SM
  EXPECT_EQ(cluster_of(9, 256, 8192), 8);
  EXPECT_EQ(cluster_of(16, 768, 4096), 4);
  EXPECT_EQ(cluster_of(16, 1024, 8192), 2);
  EXPECT_EQ(cluster_of(16, 1536, 4096), 1);
  EXPECT_EQ(cluster_of(24, 512, 8192), 1);   // three activation tiles
  EXPECT_EQ(cluster_of(1, 12288, 4096), 1);  // issue 3's shapes are untouched
  const LaunchShape shape = choose_launch_shape(1, 512, 4096, 132, true, h200_resident_ctas_per_sm);
  EXPECT_EQ(shape.warps_n, 1);
  EXPECT_EQ(shape.warps_k, kClusteredWarpsK);
  EXPECT_EQ(shape.tiles_per_warp, 1);
  EXPECT_EQ(grid_ctas(shape, 512), 128);
  EXPECT_TRUE(programmatic_at_any_fill(shape));  // PDL although 128 CTAs fill a third of the slots
  EXPECT_FALSE(programmatic_at_any_fill(choose_launch_shape(1, 1536, 4096, 132, true, h200_resident_ctas_per_sm)));
  // The same without the occupancy (a simulated GPU): the rule needs only the SM count.
  EXPECT_EQ(choose_launch_shape(1, 512, 4096, 132, true).cluster_k, 4);
  EXPECT_EQ(choose_launch_shape(1, 512, 4096, 0, true).cluster_k, 1);  // SMs unknown
  // Without PDL (FP4GEMM_PDL=0, or before SM 9.0, which has no clusters either): unclustered.
  EXPECT_EQ(choose_launch_shape(1, 512, 4096, 132, false, h200_resident_ctas_per_sm).cluster_k, 1);
}

// A clustered shape's grid is its row CTAs times the cluster: every cluster covers one row block.
TEST(CudaDecodeTuning, AClusteredGridHasAClusterPerRowBlock) {
  EXPECT_EQ(grid_ctas(LaunchShape{1, 1, 8}, 512), 32);
  EXPECT_EQ(grid_ctas(LaunchShape{1, 1, 8, 1, false, 4}, 512), 128);
  EXPECT_EQ(grid_ctas(LaunchShape{1, 1, 8, 1, false, 4}, 37), 12);  // 3 row tiles, the last partial
}

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
  EXPECT_FALSE(shape.register_bounded);
  setenv("FP4GEMM_DECODE_SHAPE", "1:8:1:1", 1);  // the register-bounded kernel: four activation tiles only
  EXPECT_THROW(shape_override(shape), Error);
  try {
    shape_override(shape);
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("M = 25-32"), std::string::npos) << error.what();
  }
  shape.m_tiles = 4;
  EXPECT_TRUE(shape_override(shape));
  EXPECT_EQ(shape.tiles_per_warp, 1);
  EXPECT_TRUE(shape.register_bounded);
  setenv("FP4GEMM_DECODE_SHAPE", "1:8:1:0", 1);
  EXPECT_TRUE(shape_override(shape));
  EXPECT_FALSE(shape.register_bounded);
  EXPECT_EQ(shape.cluster_k, 1);
  setenv("FP4GEMM_DECODE_SHAPE", "1:8:1:0:4", 1);  // K split over clusters of four CTAs too
  EXPECT_TRUE(shape_override(shape));
  EXPECT_EQ(shape.cluster_k, 4);
  EXPECT_EQ(shape.warps_k, 8);
  for (const char* bad : {"1", "0:4", "1:4:0", "x:y", "1:8:1:2", "1:8:1:0:0", "1:8:1:0:9"}) {
    setenv("FP4GEMM_DECODE_SHAPE", bad, 1);
    EXPECT_THROW(shape_override(shape), Error) << bad;
  }
  unsetenv("FP4GEMM_DECODE_SHAPE");
}

}  // namespace
}  // namespace fp4gemm::cuda_decode
