#pragma once
// The thresholds cuda_nvfp4's selector decides by, in one table: each row names the constant, its
// value, what it decides, and the measurement behind it (H200 unless an H100 is named; times are
// per call, us). `fp4gemm explain` prints the rows that decided a problem's plan, and
// `fp4gemm explain --rules` the whole table. The constants the code uses are read from here.
#include <cstdint>
#include <string_view>

namespace fp4gemm::cuda_nvfp4 {

struct SelectionRule {
  std::string_view group;     // the decision it belongs to
  std::string_view name;      // the constant in the code
  double value;
  std::string_view decides;   // what it decides, one line
  std::string_view evidence;  // the measurement behind it, one line
};

inline constexpr SelectionRule kSelectionRules[] = {
    // The kernel: mma.sync (SM 8.0+), wgmma (SM 9.0, M <= 64) or prefill (SM 9.0, M > 64).
    {"kernel", "kMaxActivationRows", 64, "the most activation rows the small-M kernels take; above, the prefill kernel",
     "by construction: eight activation tiles of 8 rows, and wgmma's widest token width here is 64"},
    {"kernel", "kWgmmaMinM", 33, "wgmma from this M on weights of N >= kWgmmaMinN or N x K >= kWgmmaMinElements",
     "12288x4096 M = 33/64: wgmma 23.4/23.9 vs mma.sync 43.7/47.1 us"},
    {"kernel", "kWgmmaMinN", 8192, "the rows that make a weight large for kWgmmaMinM",
     "M = 33/64: 8192x1024 7.9/8.1 vs 9.7/11.1 us; 4096x2048 lost, 9.9/10.2 vs 8.3/9.2"},
    {"kernel", "kWgmmaMinElements", 16777216, "N x K that makes a weight large for kWgmmaMinM",
     "M = 33/64: 4096x4096 13.3/13.6 vs 15.2/16.2 us; 2048x4096 lost, 19.2/19.4 vs 16.0/16.9"},
    {"kernel", "kWgmmaFilledMinM", 25, "wgmma from this M where its grid fills the SMs (kWgmmaMinSmFill) and K >= kWgmmaFilledMinK",
     "M = 32: 8192x8192 (128 CTAs) 22.2 vs 28.8 us, 8192x28672 63.0 vs 101.8"},
    {"kernel", "kWgmmaFilledMinK", 2048, "the K that band needs", "M = 32: 16384x2048 12.7 vs 18.7 us"},
    {"kernel", "kWgmmaMinSmFill", 0.8, "the share of SMs the wgmma grid's two-warpgroup CTAs must cover in that band",
     "M = 32: 6912x4096 (108 CTAs) 13.8 vs 15.8 us; 6144x8192 (96 CTAs) lost, 21.9 vs 18.5"},
    {"kernel", "kWgmmaMidStreamMinN", 9216, "M = 25-32: wgmma (its stream-K grid) from this many rows, whatever the fill",
     "M = 32: wgmma / mma.sync 9216x4096 0.86, 10240x5120 0.81"},
    {"kernel", "kWgmmaMidStreamMinK", 4096, "the K that rule needs", "M = 32: 8192x3584 wgmma 15.64 vs mma.sync 12.09 us"},
    {"kernel", "kWgmmaTallMinM", 17, "wgmma from this M on tall weights (kWgmmaTallMinN, kWgmmaTallStreamMinN)",
     "M = 17/24: 28672x8192 57.5/57.4 vs 61.9/70.9 us"},
    {"kernel", "kWgmmaTallMinN", 28672, "rows of a tall weight (with K >= kWgmmaTallMinK)",
     "M = 17/24: 28672x2048 18.0/18.0 vs 18.7/20.9 us; 24576x8192 lost, 57.5/57.7 vs 48.0/54.0"},
    {"kernel", "kWgmmaTallMinK", 2048, "the K tall weights need", "M = 17/24: 28672x2048 18.0/18.0 vs 18.7/20.9 us"},
    {"kernel", "kWgmmaTallStreamMinN", 18432, "rows of a tall weight for wgmma's stream-K grid (with K >= kWgmmaTallStreamMinK)",
     "M = 17/24: wgmma / mma.sync 18432x4096 0.89/0.81; 16384x4096 lost, 1.25/1.11"},
    {"kernel", "kWgmmaTallStreamMinK", 3072, "the K that rule needs", "M = 17/24: 20480x3072 0.95/0.83; 20480x2048 1.05/0.96"},
    {"kernel", "kPairsAheadOfWgmmaMaxChunksPerWarp", 96,
     "M = 17-32: mma.sync tile pairs run ahead of a K-split wgmma grid up to this many chunks a warp",
     "pairs / wgmma, M = 32, 8192 rows: K = 8192 0.90, K = 24576 (96 chunks) 0.97; H100 K = 28672 1.02"},
    {"kernel", "kMinPairsAheadOfStreamKWarpsPerSm", 9.5, "warps per SM those pairs need against a stream-K wgmma grid",
     "pairs / wgmma, M = 17-24: 11.6 warps per SM 0.80; 8.7 warps K = 12288 1.07"},
    // The mma.sync launch shape.
    {"mma.sync shape", "kMaxTailWaves", 1.5, "a grid of more than 1 and up to this many waves takes a one-wave alternative",
     "M = 1: 8192x8192 1x8 (1.29 waves) 14.33 us, 1x8x2 (0.65) 12.19"},
    {"mma.sync shape", "kMaxRowPairWaves", 2.0, "M = 17-32: up to this many waves, CTAs of twice the rows with half the K split",
     "M = 17/32: 4096x4096 1x8 (1.94 waves) 9.3/9.8 us, 2x4 (0.97) 8.0/8.2"},
    {"mma.sync shape", "kMinRegisterBoundedWarpGain", 1.1, "M = 25-32: the register-bounded kernel where its grid keeps this many times the warps",
     "M = 25/32: 4096x12288 20.3/20.7 -> 16.5/18.2 us; 2-13% slower at equal warps"},
    {"mma.sync shape", "kClusteredWarpsK", 8, "warps per CTA of a K split over clusters (few-row weights)",
     "M = 1: 512x8192 in 8-CTA clusters 5.98 -> 3.79 us"},
    {"mma.sync shape", "kMaxClusteredMTiles", 2, "activation tiles (8 rows each) that split K over clusters",
     "M = 9/16: 512x8192 in 4-CTA clusters 6.20/6.31 -> 3.72/4.26 us"},
    {"mma.sync shape", "kMaxClusteredRuleSmFill", 0.5, "clusters where the unclustered grid fills at most this share of the SMs",
     "M = 1: 512x4096 (32 CTAs) 4.19 -> 3.53 us; M = 16: 3072x4096 with 2-CTA clusters lost 35%"},
    {"mma.sync shape", "kMinClusteredChunks", 64, "chunks of 64 (K >= 4096) a clustered split needs",
     "M = 1: 1024x2048 3.02 -> 3.26 us with 2-CTA clusters"},
    {"mma.sync shape", "kMinChunksPerClusteredWarp", 2, "chunks each warp of a cluster keeps at least",
     "M = 1: 512x8192 at 8 CTAs x 8 warps (2 chunks a warp) 3.79 us against 5.98 unclustered"},
    {"mma.sync shape", "kMaxClusteredCtasPerSmOneTile", 2.0, "M <= 8: the clustered grid's CTAs per SM at most",
     "M = 1: 1024x8192 in 4-CTA clusters (256 CTAs, 1.9 per SM) 6.23 -> 5.30 us"},
    {"mma.sync shape", "kMaxClusteredCtasPerSmTwoTiles", 1.5, "M = 9-16: the clustered grid's CTAs per SM at most",
     "M = 9/16: grids of 256 CTAs ran 1.4-2x slower; 1024x8192 in 2-CTA clusters 6.41/6.57 -> 5.20/5.48 us"},
    // Programmatic dependent launch.
    {"PDL", "kProgrammaticMinSlotFraction", 0.9, "mma.sync takes PDL where its grid fills this share of the resident CTA slots",
     "M = 1: 12288x4096 (full) 9.67 -> 8.58 us with PDL; 4096x12288 (0.65 of the slots) 10.55 -> 11.71"},
    // The wgmma grid.
    {"wgmma grid", "kWgmmaStreamMaxFill", 0.8, "stream-K where the data-parallel grid keeps the SMs busy less than this",
     "M = 17-64, stream-K / data-parallel: 10240x8192 (160 CTAs on 264 slots) 0.79-0.83"},
    {"wgmma grid", "kWgmmaStreamCrowdedMaxFill", 0.9, "M <= 32: stream-K where a grid of more CTAs than SMs fills less than this",
     "M = 17-32: 28672x8192 (224 CTAs on 264 slots) stream-K 0.94 of data-parallel"},
    {"wgmma grid", "kWgmmaStreamOneWarpgroupMinChunks", 128, "stream-K for grids of one warpgroup per SM from this many chunks",
     "4096x12288 (192 chunks) stream-K / data-parallel 0.79-0.89; 4096x4096 (64) 1.07 at M = 64"},
    {"kernel", "kWidePrefillMinM", 256, "the wide prefill kernel (weights decoded in registers, 256 activation rows a CTA) from this M, where its grid fills kWideMinSmFill of the SMs",
     "H100, wide / prefill: 28672x8192 M = 256 197.0 vs 260.4 us, M = 4096 2928 vs 4015; M = 65-255 not measured"},
    {"kernel", "kWideMinSmFill", 0.7, "the share of SMs the wide kernel's one-CTA tiles must cover (it has no K split)",
     "H100: 12288x4096 M = 256 (96 tiles) 50.5 vs 67.1 us; 2048x4096 M = 1024 (64 tiles) lost, 50.2 vs 36.1"},
    // The wide prefill kernel's CTA width above kWideNarrowMaxM (256 or 128 activation rows).
    {"wide", "kWideNarrowTileCost", 0.57, "a 128-row tile's time as a share of a 256-row tile's, in the width's wave model",
     "H100, persistent grid: 28672x8192 M = 4096 7168 tiles of 128 3483.6 us, 3584 of 256 3068.4"},
    {"wide", "kWideNarrowMinGain", 0.9, "128 rows are taken where the model's time falls below this share of 256's",
     "H100, 128 vs 256: 12288x4096 M = 512 (model 0.85) 101.9 vs 108.2 us; 28672x8192 M = 512 (0.99) lost, 450.8 vs 419.0"},
    // The prefill kernel's K split.
    {"prefill", "kPrefillMaxKSplits", 8, "the most ways a prefill tile's K is split",
     "4096x12288 M = 65: 4 ways 89.9 -> 33.1 us; 28672x8192 2-8 ways 17-60% slower"},
    {"prefill", "kPrefillMinChunksPerSplit", 8, "chunks each split CTA keeps at least", "12288x4096 M = 65: 4 ways of 16 chunks 44.4 us vs 34.3 unsplit"},
    {"prefill", "kPrefillCtaOverheadChunks", 16, "what a split CTA costs beyond its chunks, in chunk-times (pipeline fill, partial hand-off)",
     "~5.6 us a split CTA at ~0.47 us a chunk; picks the measured best split on all twelve rows"},
    {"prefill", "kPrefillSplitMinGain", 0.9, "more splits only where they cost below this share of the best so far",
     "4096x4096 M = 256: 2 ways 33.8 -> 24.3 us"},
};

// A rule's value by name; a name not in the table fails the build where it is asked for.
constexpr double selection_rule(std::string_view name) {
  for (const SelectionRule& rule : kSelectionRules)
    if (rule.name == name) return rule.value;
  throw "no such selection rule";
}

}  // namespace fp4gemm::cuda_nvfp4
