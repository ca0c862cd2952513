// The mma.sync kernel's launch rules on the host: its CTA shapes and their one-wave alternatives,
// the clustered K split of few-row weights, PDL, and the shape knob. (The weight layout and decode
// trick: weight_layout_test.cpp; the kernel switch: kernel_switch_test.cpp.)
#include <gtest/gtest.h>

#include <array>
#include <cstdlib>

#include "backends/cuda_nvfp4/mma_small_m/sm80_nvfp4_mma_tuning.hpp"
#include "backends/cuda_nvfp4/weight_layout.hpp"
#include "fp4gemm/error.hpp"
#include "support/test_support.hpp"
#include "backends/cuda_nvfp4/h200_occupancy.hpp"

namespace fp4gemm::cuda_nvfp4 {
namespace {

TEST(CudaNvfp4MmaTuning, ActivationTilesAreTheFewestThatHoldMUpToFourThenEight) {
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

TEST(CudaNvfp4MmaTuning, ShapesCoverEveryM) {
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

TEST(CudaNvfp4MmaTuning, SplitsKToAboutThirtyTwoChunksPerWarpWhileTheGridIsLargeEnough) {
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

TEST(CudaNvfp4MmaTuning, AGridOfAPartialSecondWaveTakesTheMeasuredOneWaveAlternative) {
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

TEST(CudaNvfp4MmaTuning, TheWaveRuleLeavesTheIssueShapesAndGridsOfOneOrSeveralWavesAlone) {
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

TEST(CudaNvfp4MmaTuning, ThreeAndFourActivationTilesTakeCtasOfTwiceTheRowsWhereTheRulesGridTakesUpToTwoWaves) {
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
  // 5120 rows: 2.42 waves, and row pairs would still take 1.21 (they lost); half the K split in
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

TEST(CudaNvfp4MmaTuning, FourActivationTilesPastTwoWavesHalveTheKSplit) {
  using Shape = std::array<int, 4>;
  const auto shape_of = [](std::int64_t m, std::int64_t n, std::int64_t k) {
    const LaunchShape shape = choose_launch_shape(m, n, k, 132, true, h200_resident_ctas_per_sm);
    return Shape{shape.warps_n, shape.warps_k, shape.tiles_per_warp, int(shape.register_bounded)};
  };
  // 272-288 CTAs of 1x8 at one per SM (2.06-2.18 waves) -> 1x4 at three per SM (1.37-1.45), ahead of
  // the register-bounded 1x8 (4352x4096 10.97 against 14.04 and 12.04 us).
  EXPECT_EQ(shape_of(32, 4352, 4096), (Shape{1, 4, 1, 0}));
  EXPECT_EQ(shape_of(25, 4608, 3584), (Shape{1, 4, 1, 0}));
  EXPECT_EQ(shape_of(32, 4608, 8192), (Shape{1, 4, 1, 0}));
  EXPECT_EQ(shape_of(32, 5632, 4096), (Shape{1, 4, 1, 0}));
  // Not where 1x4 would leave a warp more than kChunksPerWarp chunks, nor under two waves.
  EXPECT_NE(shape_of(32, 4608, 16384), (Shape{1, 4, 1, 0}));
  EXPECT_NE(shape_of(32, 4096, 4096), (Shape{1, 4, 1, 0}));  // 1.94 waves
}

TEST(CudaNvfp4MmaTuning, FourActivationTilesTakeTheRegisterBoundedKernelWhereItsGridKeepsMoreWarpsPerSm) {
  using Shape = std::array<int, 4>;
  // Without tile pairs, which take 4096 rows first (ThreeAndFourActivationTilesTakeTilePairs...).
  const auto shape_of = [](std::int64_t m, std::int64_t n, std::int64_t k) {
    const LaunchShape shape = choose_launch_shape(m, n, k, 132, true, h200_resident_ctas_per_sm_without_many_tile_pairs);
    EXPECT_EQ(shape.m_tiles, activation_tiles(m));
    return Shape{shape.warps_n, shape.warps_k, shape.tiles_per_warp, int(shape.register_bounded)};
  };
  // The measured winners: 256 CTAs of 1x8 at two
  // per SM (15.5 warps) against 128 of 2x4 at one (7.8).
  for (std::int64_t m : {25, 32}) {
    EXPECT_EQ(shape_of(m, 4096, 12288), (Shape{1, 8, 1, 1})) << m;
    EXPECT_EQ(shape_of(m, 4096, 4096), (Shape{1, 8, 1, 1})) << m;
    EXPECT_EQ(shape_of(m, 3072, 4096), (Shape{1, 8, 1, 1})) << m;  // 11.6 warps against 1x4's 5.8
    EXPECT_EQ(shape_of(m, 5120, 12288), (Shape{1, 4, 1, 1})) << m;  // 9.7 against 8 (1x8 at 2.42 waves)
    // ... but where the unbounded 1x8 grid takes more than two waves and 1x4 keeps at most 32 chunks
    // a warp, the unbounded 1x4 comes first (5120x8192 19.32 against 19.60 us).
    EXPECT_EQ(shape_of(m, 5120, 4096), (Shape{1, 4, 1, 0})) << m;
    // The measured losers: the same grid's warps either way.
    EXPECT_EQ(shape_of(m, 12288, 4096), (Shape{2, 2, 1, 0})) << m;
    EXPECT_EQ(shape_of(m, 2048, 8192), (Shape{1, 8, 1, 0})) << m;
    EXPECT_EQ(shape_of(m, 6144, 4096), (Shape{1, 4, 1, 0})) << m;
    EXPECT_EQ(shape_of(m, 10240, 8192), (Shape{2, 2, 1, 0})) << m;
    EXPECT_EQ(shape_of(m, 12288, 8192), (Shape{2, 2, 1, 0})) << m;
  }
  // Twice the warps, but 4 chunks a warp: lost by 2-5%.
  EXPECT_EQ(shape_of(25, 4096, 2048), (Shape{2, 4, 1, 0}));
  EXPECT_EQ(shape_of(25, 4096, 4096 - 64), (Shape{2, 4, 1, 0}));  // 63 chunks: 7 a warp
  // Fewer tiles have no bounded kernel; nor does a simulated GPU (no occupancy).
  EXPECT_FALSE(choose_launch_shape(24, 4096, 12288, 132, true, h200_resident_ctas_per_sm).register_bounded);
  EXPECT_FALSE(choose_launch_shape(32, 4096, 12288, 132, true).register_bounded);
}

TEST(CudaNvfp4MmaTuning, ThreeAndFourActivationTilesTakeTilePairsWhereTheyFitOneWaveWithEnoughWarps) {
  using Shape = std::array<int, 3>;
  const auto shape_of = [](std::int64_t m, std::int64_t n, std::int64_t k) {
    return fields_of(choose_launch_shape(m, n, k, 132, true, h200_resident_ctas_per_sm));
  };
  // The measured winners: 128 CTAs of 1x8x2 at one
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
  // Below kMinManyTilePairsM rows only grids of 9.5 warps per SM or more: 12288x4096's
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

TEST(CudaNvfp4MmaTuning, UnknownOccupancyOrNoOneWaveAlternativeKeepsTheRulesShape) {
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

TEST(CudaNvfp4MmaTuning, TheSplitsThatFillTheGpuForPdlAreNotUsedWithoutIt) {
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


TEST(CudaNvfp4MmaTuning, ProgrammaticLaunchFollowsTheGridUnlessForcedAndNeverBeforeSm90) {
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

TEST(CudaNvfp4MmaTuning, AGridFillsTheGpuFromNinetyPercentOfItsResidentSlots) {
  // The H200 figures behind the rule (sm80_nvfp4_mma_tuning.hpp): 132 SMs.
  EXPECT_TRUE(grid_fills_gpu(896, 7, 132));   // M = 1 28672x8192: 896 of 924 slots
  EXPECT_TRUE(grid_fills_gpu(896, 4, 132));   // M = 16 28672x8192: 1.7 waves
  EXPECT_FALSE(grid_fills_gpu(256, 3, 132));  // M = 1 4096x12288: 256 of 396
  EXPECT_FALSE(grid_fills_gpu(384, 4, 132));  // M = 16 12288x4096: 384 of 528
  EXPECT_TRUE(grid_fills_gpu(256, 2, 132));   // M = 16 4096x12288: 256 of 264
  EXPECT_FALSE(grid_fills_gpu(237, 2, 132));  // just under 0.9 x 264
  EXPECT_TRUE(grid_fills_gpu(238, 2, 132));
  EXPECT_FALSE(grid_fills_gpu(1000, 0, 132));  // occupancy unknown: no PDL
}

// Weights of few rows at M <= 16 split K over clusters (sm80_nvfp4_mma_tuning.hpp, kClusteredWarpsK), as
// measured on the H200; the rows where clusters lost
// keep the unclustered rule, and so do three or more activation tiles.
TEST(CudaNvfp4MmaTuning, FewRowWeightsSplitKOverClusters) {
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
TEST(CudaNvfp4MmaTuning, AClusteredGridHasAClusterPerRowBlock) {
  EXPECT_EQ(grid_ctas(LaunchShape{1, 1, 8}, 512), 32);
  EXPECT_EQ(grid_ctas(LaunchShape{1, 1, 8, 1, false, 4}, 512), 128);
  EXPECT_EQ(grid_ctas(LaunchShape{1, 1, 8, 1, false, 4}, 37), 12);  // 3 row tiles, the last partial
}

TEST(CudaNvfp4MmaTuning, TheShapeKnobTakesTilesPerWarpOptionally) {
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
}  // namespace fp4gemm::cuda_nvfp4
