#include "backends/cuda_nvfp4/mma_small_m/sm80_nvfp4_mma_tuning.hpp"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>

#include "backends/cuda_nvfp4/weight_layout.hpp"
#include "fp4gemm/error.hpp"

namespace fp4gemm::cuda_nvfp4 {
namespace {

// The shape rule by the problem's size alone (choose_launch_shape then checks its waves).
LaunchShape rule_shape(std::int64_t m, std::int64_t n, std::int64_t k, int multiprocessors, bool programmatic) {
  LaunchShape shape;
  shape.m_tiles = activation_tiles(m);
  if (shape.m_tiles > 4) {
    // M > 32 is cuBLAS's range on SM 9.0 (auto does not pick this kernel there); 2 x 4 was fastest
    // for 8 tiles in the sweep of.
    shape.warps_n = 2;
    shape.warps_k = 4;
    return shape;
  }
  // Split K until each warp streams about kChunksPerWarp chunks (longer runs amortise the ring's
  // fill and the reduction; shorter ones leave the ring's latency exposed), then further while the
  // grid has too few warps to keep every SM's loads in flight. CTAs hold at least 4 warps.
  // Measured on the H200 (scripts/decode_shape_sweep.sh):
  // this picks the fastest compiled shape on all four issue-3 shapes at M = 1 and 16, and on
  // 12288x4096 and 28672x8192 at M = 24 and 32 (then 4 tiles; three tiles, M = 17-24, within 3% of
  // the fastest forced shape on 10 of 11 weights). A 4 x 1 CTA
  // (no K split) was never fastest, so K is always split at least kMinWarpsK ways.
  const std::int64_t row_tiles = (n + kTileRows - 1) / kTileRows;
  const std::int64_t chunks = chunks_covering(k);
  const std::int64_t min_grid_warps = std::int64_t(min_grid_warps_per_sm(shape.m_tiles)) * multiprocessors;
  // The K split for warps that each own `row_units` row positions.
  const auto split_for = [&](std::int64_t row_units, int min_warps_k) {
    int warps_k = min_warps_k;
    while (warps_k < kMaxWarpsK && chunks > std::int64_t(kChunksPerWarp) * warps_k) warps_k *= 2;
    while (warps_k < kMaxWarpsK && row_units * warps_k < min_grid_warps) warps_k *= 2;
    return warps_k;
  };
  // Two weight tiles per warp halve the activation bytes per weight byte, and pay where the grid
  // of half as many warps still reaches min_grid_warps (sm80_nvfp4_mma_tuning.hpp).
  const std::int64_t tile_pairs = (row_tiles + 1) / 2;
  const int paired_split = split_for(tile_pairs, shape.m_tiles == 2 ? kMinPairedTwoTileWarpsK : kMinWarpsK);
  if (shape.m_tiles <= kMaxPairedMTiles && tile_pairs * paired_split >= min_grid_warps) {
    shape.tiles_per_warp = 2;
    shape.warps_k = paired_split;
    const std::int64_t five_warp_slots = std::int64_t(kFiveWarpCtasPerSm) * multiprocessors;
    if (programmatic && shape.m_tiles == 2 && paired_split == 4 && tile_pairs <= five_warp_slots &&
        double(tile_pairs) >= kProgrammaticMinSlotFraction * double(five_warp_slots)) {
      shape.warps_k = kPairedFillWarpsK;
    }
  } else if (programmatic && shape.m_tiles <= kMaxPairedMTiles && tile_pairs <= multiprocessors &&
             double(tile_pairs) >= kPairedWideMinSmFill * multiprocessors &&
             chunks >= std::int64_t(kMinChunksPerPairedWideWarp) * kPairedWideWarpsK) {
    // Too few tile pairs for the usual splits, but one CTA of kPairedWideWarpsK warps per pair
    // fills (nearly) every SM once (sm80_nvfp4_mma_tuning.hpp).
    shape.tiles_per_warp = 2;
    const bool wider = shape.m_tiles == 1 && chunks > std::int64_t(kMaxChunksPerPairedWideWarp) * kPairedWideWarpsK;
    shape.warps_k = wider ? kPairedWiderWarpsK : kPairedWideWarpsK;
  } else {
    shape.warps_k = split_for(row_tiles, kMinWarpsK);
    // Whether the 12-way grid (row_tiles CTAs of 1 x 12 warps) fills the GPU by the launch's own
    // PDL test, at the one-tile kernel's min_resident_warps warps per SM.
    const bool wide_fills = grid_fills_gpu(row_tiles, min_resident_warps(1, kWideWarpsK, 1) / kWideWarpsK, multiprocessors);
    if (programmatic && shape.m_tiles == 1 && row_tiles * shape.warps_k < min_grid_warps &&
        chunks >= std::int64_t(kMinChunksPerWideWarp) * kWideWarpsK && wide_fills) {
      shape.warps_k = kWideWarpsK;
    }
  }
  shape.warps_n = shape.warps_k >= kMinCtaWarps ? 1 : kMinCtaWarps / shape.warps_k;
  return shape;
}

// `shape`, or where its grid runs more than one wave, the first alternative that fits one wave: up
// to kMaxTailWaves, tile pairs, else half the K-warps per CTA; for three or four activation tiles
// beyond that and up to kMaxRowPairWaves, CTAs of twice the rows with half the K split.
LaunchShape fit_to_one_wave(const LaunchShape& shape, std::int64_t n, int multiprocessors, const ResidentCtasPerSm& resident_ctas_per_sm) {
  const auto waves = [&](const LaunchShape& candidate) { return shape_waves(candidate, n, multiprocessors, resident_ctas_per_sm); };
  const double rule_waves = waves(shape);
  const bool halves_k = shape.warps_k % 2 == 0 && shape.warps_k / 2 >= kMinWarpsK;
  LaunchShape alternatives[2];
  int count = 0;
  if (rule_waves > 1.0 && rule_waves <= kMaxTailWaves) {
    if (shape.tiles_per_warp == 1 && shape.m_tiles <= kMaxPairedMTiles) {
      alternatives[count++] = LaunchShape{shape.m_tiles, shape.warps_n, shape.warps_k, 2, shape.register_bounded};
    }
    if (halves_k) {
      const int warps_k = shape.warps_k / 2;
      const int warps_n = warps_k >= kMinCtaWarps ? 1 : kMinCtaWarps / warps_k;
      alternatives[count++] = LaunchShape{shape.m_tiles, warps_n, warps_k, shape.tiles_per_warp, shape.register_bounded};
    }
  } else if (rule_waves > kMaxTailWaves && rule_waves <= kMaxRowPairWaves && halves_k && shape.m_tiles > kMaxPairedMTiles &&
             shape.m_tiles <= kMaxRowPairMTiles) {
    alternatives[count++] =
        LaunchShape{shape.m_tiles, 2 * shape.warps_n, shape.warps_k / 2, shape.tiles_per_warp, shape.register_bounded};
  }
  for (int i = 0; i < count; ++i) {
    const double alternative_waves = waves(alternatives[i]);
    if (alternative_waves > 0.0 && alternative_waves <= 1.0) return alternatives[i];
  }
  return shape;
}

// Four activation tiles whose rule grid of 1x8 CTAs runs more than kMaxRowPairWaves waves: the 1x4
// grid of half the K split where it fits kMaxRowPairWaves and its warps stream at most
// kChunksPerWarp chunks (sm80_nvfp4_mma_tuning.hpp, next to kMaxRowPairWaves); otherwise nothing. It wins
// over the register-bounded forms too, so it is taken before choose_launch_shape weighs them.
std::optional<LaunchShape> four_tile_half_split(const LaunchShape& shape, std::int64_t n, std::int64_t chunks, int multiprocessors,
                                                const ResidentCtasPerSm& resident_ctas_per_sm) {
  if (shape.m_tiles != kRegisterBoundedMTiles || shape.register_bounded || shape.warps_n != 1 ||
      shape.warps_k != 2 * kMinCtaWarps || chunks > std::int64_t(kChunksPerWarp) * kMinCtaWarps) {
    return std::nullopt;
  }
  const LaunchShape half_k{shape.m_tiles, 1, kMinCtaWarps, shape.tiles_per_warp, false};
  const double rule_waves = shape_waves(shape, n, multiprocessors, resident_ctas_per_sm);
  const double half_k_waves = shape_waves(half_k, n, multiprocessors, resident_ctas_per_sm);
  if (rule_waves > kMaxRowPairWaves && half_k_waves > 0.0 && half_k_waves <= kMaxRowPairWaves) return half_k;
  return std::nullopt;
}

// Three or four activation tiles in tile pairs (sm80_nvfp4_mma_tuning.hpp, kMinManyTilePairWarpsPerSm): of the
// pair shapes whose grid fits one wave with at least `min_warps` resident warps per SM, the one with
// the most; none where none does.
std::optional<LaunchShape> one_wave_tile_pairs(int m_tiles, std::int64_t n, int multiprocessors, double min_warps,
                                               const ResidentCtasPerSm& resident_ctas_per_sm) {
  std::optional<LaunchShape> best;
  double best_warps = 0.0;
  for (const auto& [warps_n, warps_k] : {std::pair{1, 8}, std::pair{1, 4}, std::pair{2, 2}}) {
    const LaunchShape pairs{m_tiles, warps_n, warps_k, 2, false};
    const double waves = shape_waves(pairs, n, multiprocessors, resident_ctas_per_sm);
    const double warps = resident_warps_per_sm(pairs, n, multiprocessors, resident_ctas_per_sm);
    if (waves > 0.0 && waves <= 1.0 && warps >= min_warps && warps > best_warps) best = pairs, best_warps = warps;
  }
  return best;
}



// One or two activation tiles on a weight of few rows (sm80_nvfp4_mma_tuning.hpp, kClusteredWarpsK): the
// clustered shape that replaces the rule's `shape`, or `shape` where none does.
LaunchShape clustered_for_few_rows(const LaunchShape& shape, std::int64_t n, std::int64_t k, int multiprocessors) {
  if (shape.m_tiles > kMaxClusteredMTiles || multiprocessors <= 0 ||
      double(grid_ctas(shape, n)) > kMaxClusteredRuleSmFill * multiprocessors) {
    return shape;
  }
  const std::int64_t chunks = chunks_covering(k);
  if (chunks < kMinClusteredChunks) return shape;
  LaunchShape clustered{shape.m_tiles, 1, kClusteredWarpsK};
  const std::int64_t row_ctas = grid_ctas(clustered, n);
  const auto fits = [&](int cluster_k) {
    return cluster_k <= kMaxDecodeClusterK &&
           double(row_ctas * cluster_k) <= max_clustered_ctas_per_sm(shape.m_tiles) * multiprocessors &&
           chunks >= std::int64_t(kMinChunksPerClusteredWarp) * kClusteredWarpsK * cluster_k;
  };
  while (fits(2 * clustered.cluster_k)) clustered.cluster_k *= 2;
  return clustered.cluster_k > 1 ? clustered : shape;
}

}  // namespace

std::optional<LaunchShape> many_tile_pairs_in_one_wave(std::int64_t m, std::int64_t n, int multiprocessors,
                                                       const ResidentCtasPerSm& resident_ctas_per_sm) {
  const int m_tiles = activation_tiles(m);
  if (!resident_ctas_per_sm || m_tiles <= kMaxPairedMTiles || m_tiles > kRegisterBoundedMTiles) return std::nullopt;
  return one_wave_tile_pairs(m_tiles, n, multiprocessors, min_many_tile_pair_warps_per_sm(m), resident_ctas_per_sm);
}

LaunchShape choose_launch_shape(std::int64_t m, std::int64_t n, std::int64_t k, int multiprocessors, bool programmatic,
                                const ResidentCtasPerSm& resident_ctas_per_sm) {
  const LaunchShape rule = rule_shape(m, n, k, multiprocessors, programmatic);
  const LaunchShape shape = programmatic ? clustered_for_few_rows(rule, n, k, multiprocessors) : rule;
  if (!resident_ctas_per_sm || shape.cluster_k > 1) return shape;
  if (const auto pairs = many_tile_pairs_in_one_wave(m, n, multiprocessors, resident_ctas_per_sm)) return *pairs;
  if (shape.m_tiles != kRegisterBoundedMTiles) return fit_to_one_wave(shape, n, multiprocessors, resident_ctas_per_sm);
  const std::int64_t chunks = chunks_covering(k);
  if (const auto half_split = four_tile_half_split(shape, n, chunks, multiprocessors, resident_ctas_per_sm)) return *half_split;
  const LaunchShape fitted = fit_to_one_wave(shape, n, multiprocessors, resident_ctas_per_sm);
  LaunchShape bounded_rule = shape;
  bounded_rule.register_bounded = true;
  const LaunchShape bounded = fit_to_one_wave(bounded_rule, n, multiprocessors, resident_ctas_per_sm);
  const double warps = resident_warps_per_sm(fitted, n, multiprocessors, resident_ctas_per_sm);
  const double bounded_warps = resident_warps_per_sm(bounded, n, multiprocessors, resident_ctas_per_sm);
  const bool long_enough = chunks >= std::int64_t(kMinRegisterBoundedChunksPerWarp) * bounded.warps_k;
  return warps > 0.0 && bounded_warps > kMinRegisterBoundedWarpGain * warps && long_enough ? bounded : fitted;
}

std::int64_t grid_ctas(const LaunchShape& shape, std::int64_t n) {
  const std::int64_t row_tiles = (n + kTileRows - 1) / kTileRows;
  const std::int64_t cta_tiles = std::int64_t(shape.warps_n) * shape.tiles_per_warp;
  return (row_tiles + cta_tiles - 1) / cta_tiles * shape.cluster_k;
}

double resident_warps_per_sm(const LaunchShape& shape, std::int64_t n, int multiprocessors, const ResidentCtasPerSm& resident_ctas_per_sm) {
  const std::int64_t slots = std::int64_t(resident_ctas_per_sm(shape)) * multiprocessors;
  if (slots <= 0) return 0.0;
  return double(std::min(grid_ctas(shape, n), slots)) * shape.warps_n * shape.warps_k / multiprocessors;
}

double shape_waves(const LaunchShape& shape, std::int64_t n, int multiprocessors, const ResidentCtasPerSm& resident_ctas_per_sm) {
  return grid_waves(grid_ctas(shape, n), resident_ctas_per_sm(shape), multiprocessors);
}

bool shape_override(LaunchShape& shape, const Overrides& overrides) {
  if (!overrides.decode_shape) return false;
  const char* text = overrides.decode_shape->c_str();
  int warps_n = 0, warps_k = 0, tiles_per_warp = 1, bounded = 0, cluster_k = 1;
  const int fields = std::sscanf(text, "%d:%d:%d:%d:%d", &warps_n, &warps_k, &tiles_per_warp, &bounded, &cluster_k);
  if (fields < 2 || warps_n < 1 || warps_k < 1 || tiles_per_warp < 1 || (bounded != 0 && bounded != 1) || cluster_k < 1 ||
      cluster_k > kMaxDecodeClusterK) {
    throw_invalid(std::string("FP4GEMM_DECODE_SHAPE must look like 2:4, 2:4:2, 1:8:1:1 or 1:8:1:0:4 "
                              "(warps_n:warps_k[:tiles_per_warp[:bounded 0 or 1[:cluster_k 1-") +
                  std::to_string(kMaxDecodeClusterK) + "]]]), not '" + text + "'");
  }
  if (bounded == 1 && shape.m_tiles != kRegisterBoundedMTiles) {
    throw_invalid(std::string("FP4GEMM_DECODE_SHAPE '") + text +
                  "' asks for the register-bounded kernel, which exists for four activation tiles only (M = 25-32); M needs " +
                  std::to_string(shape.m_tiles) + (shape.m_tiles == 1 ? " tile" : " tiles"));
  }
  shape.warps_n = warps_n;
  shape.warps_k = warps_k;
  shape.tiles_per_warp = tiles_per_warp;
  shape.register_bounded = bounded == 1;
  shape.cluster_k = cluster_k;
  return true;
}

ProgrammaticLaunch programmatic_launch_policy(int sm, const Overrides& overrides) {
  ProgrammaticLaunch policy = ProgrammaticLaunch::when_grid_fills;
  if (overrides.pdl) {
    const std::string& value = *overrides.pdl;
    if (value == "1") {
      policy = ProgrammaticLaunch::on;
    } else if (value == "0") {
      policy = ProgrammaticLaunch::off;
    } else {
      throw_invalid("FP4GEMM_PDL must be '0' or '1', not '" + value + "'");
    }
  }
  return sm < 90 ? ProgrammaticLaunch::off : policy;  // griddepcontrol is SM 9.0 and newer
}

}  // namespace fp4gemm::cuda_nvfp4
