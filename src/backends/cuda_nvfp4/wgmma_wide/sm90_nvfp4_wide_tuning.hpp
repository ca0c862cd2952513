#pragma once
// Tuned constants of cuda_nvfp4's wide prefill kernel (sm90_nvfp4_wide_gemm.cu, SM 9.0): the CTA's
// activation rows, the ring's stages and the order its output tiles are handed out in.
#include <cstdint>

#include "backends/cuda_nvfp4/selection_rules.hpp"
#include "backends/cuda_nvfp4/weight_layout.hpp"

namespace fp4gemm::cuda_nvfp4 {

// Where the kernel switch takes this kernel over the prefill kernel (selection_rules.hpp): from
// kWidePrefillMinM rows where its tiles cover kWideMinSmFill of the SMs. Measured on an H100
// (bench/results/h100-prefill.md), against the prefill kernel and cuBLAS BF16 in the same run.
inline constexpr std::int64_t kWidePrefillMinM = std::int64_t(selection_rule("kWidePrefillMinM"));
inline constexpr double kWideMinSmFill = double(selection_rule("kWideMinSmFill"));

// Activation rows a CTA multiplies each decoded weight element with: the wgmma's N (128 or 256).
// At 256 a consumer warp's decode of a 16 x 64 weight tile (~60 instructions) is hidden under
// 4 x 128 cycles of its warpgroup's wgmmas, and the two warpgroups' B reads plus the ring's
// fills take ~830 of the 1024 shared-memory cycles per chunk that the tensor pipe needs.
inline constexpr int kWideTokens = 256;
// Up to this M the CTA is 128 activation rows wide (half the padding of a 256-row block); above,
// where the wave model says so (wide_tokens).
inline constexpr std::int64_t kWideNarrowMaxM = 128;
inline constexpr double kWideNarrowTileCost = double(selection_rule("kWideNarrowTileCost"));
inline constexpr double kWideNarrowMinGain = double(selection_rule("kWideNarrowMinGain"));
// Weight rows per CTA: one weight record (two consumer warpgroups of 64 rows).
inline constexpr int kWideCtaRows = kTileRows * kTilesPerBlock;
// Most stages of the ring (each one chunk: a weight record and the chunk's packed activations).
inline constexpr int kWideMaxStages = 8;
// Output tiles are handed out in groups of this many activation-row blocks, every weight-row
// block of the group's first block before the next: 132 CTAs then share 4 activation blocks
// (16 MB at K = 8192, M = 4096) and ~33 weight blocks (19 MB), which fit the 50 MB L2 together.
inline constexpr int kWideRasterTokenBlocks = 4;

// The CTA width by M alone (the fill rule's tiles).
constexpr int wide_tokens(std::int64_t m) { return m <= kWideNarrowMaxM ? 128 : kWideTokens; }
// Output tiles of an M x N problem at a CTA width of `tokens` activation rows.
constexpr std::int64_t wide_tiles(std::int64_t m, std::int64_t n, int tokens) {
  return (m + tokens - 1) / tokens * ((n + kWideCtaRows - 1) / kWideCtaRows);
}
constexpr std::int64_t wide_tiles(std::int64_t m, std::int64_t n) { return wide_tiles(m, n, wide_tokens(m)); }
// The persistent grid: one CTA per SM (its shared memory holds one), at most one per tile;
// `knob` (FP4GEMM_WIDE_CTAS, a measurement knob) sets the count, clamped to the tiles.
constexpr std::int64_t wide_grid_ctas(std::int64_t m, std::int64_t n, int multiprocessors, int knob = 0, int tokens = 0) {
  const std::int64_t tiles = wide_tiles(m, n, tokens > 0 ? tokens : wide_tokens(m));
  const std::int64_t ctas = knob > 0 ? knob : multiprocessors > 0 ? multiprocessors : tiles;
  return ctas < tiles ? ctas : tiles;
}

// The SM count the rule assumes when the device's is unknown (an H100 or H200).
inline constexpr int kWideAssumedMultiprocessors = 132;
// The CTA width for M x N on `multiprocessors` SMs (0: unknown): 128 up to kWideNarrowMaxM; above,
// 128 where the persistent grid's rounds of tiles per SM, a 128-row tile costing
// kWideNarrowTileCost of a 256-row one, take below kWideNarrowMinGain of the 256-row rounds' time
// (a short last round of few large tiles: 12288x4096 M = 512 is 1.45 rounds of 256 rows, 2.9 of 128).
constexpr int wide_tokens(std::int64_t m, std::int64_t n, int multiprocessors) {
  if (m <= kWideNarrowMaxM) return 128;
  const std::int64_t sms = multiprocessors > 0 ? multiprocessors : kWideAssumedMultiprocessors;
  const std::int64_t narrow_rounds = (wide_tiles(m, n, 128) + sms - 1) / sms, wide_rounds = (wide_tiles(m, n, 256) + sms - 1) / sms;
  return double(narrow_rounds) * kWideNarrowTileCost < kWideNarrowMinGain * double(wide_rounds) ? 128 : kWideTokens;
}
// Whether the kernel switch takes the wide kernel for M x N on `multiprocessors` SMs (0: unknown).
constexpr bool wide_rule_holds(std::int64_t m, std::int64_t n, int multiprocessors) {
  const int sms = multiprocessors > 0 ? multiprocessors : kWideAssumedMultiprocessors;
  return m >= kWidePrefillMinM && double(wide_tiles(m, n)) >= kWideMinSmFill * sms;
}

}  // namespace fp4gemm::cuda_nvfp4
