#pragma once
// Launch configurations of cuda_nvfp4's mma.sync kernel (sm80_nvfp4_mma_gemm.cu): activation
// tiles, CTA shapes and their one-wave alternatives, clusters for few-row weights, and PDL. The
// switch between the kernels is kernel_switch.hpp; the thresholds the selector decides by are in
// selection_rules.hpp. The measurements behind each are on the H200 unless an H100 is named.
#include <cstdint>
#include <functional>
#include <optional>

#include "backends/cuda_nvfp4/wgmma_prefill/sm90_nvfp4_prefill_tuning.hpp"
#include "backends/cuda_nvfp4/overrides.hpp"
#include "backends/cuda_nvfp4/selection_rules.hpp"
#include "backends/cuda_nvfp4/wgmma_small_m/sm90_nvfp4_wgmma_tuning.hpp"

namespace fp4gemm::cuda_nvfp4 {

// Activation rows are processed in MMA tiles of 8; the kernel is instantiated for this many tiles.
inline constexpr int kMaxActivationRows = int(selection_rule("kMaxActivationRows"));

// The activation tiles of 8 rows the mma.sync kernel runs for M rows: 1, 2, 3 or 4 as needed, 8
// above 32 rows (a 5-7 tile kernel was never measured; M > 32 runs wgmma on SM 9.0 mostly). Three
// tiles exist because M = 17-24 on four cost nearly what M = 32 costs: the unbounded four-tile
// kernel holds 138 registers (12 warps per SM at most), the three-tile one 126-127 (16, as two
// tiles); the four-tile kernel's register-bounded form (kRegisterBoundedWarpsPerSm) 128 with spills.
constexpr int activation_tiles(std::int64_t m) {
  const std::int64_t tiles = (m + 7) / 8;
  return tiles <= 1 ? 1 : tiles <= 4 ? int(tiles) : 8;
}

// Weight chunks (64 columns x 16 rows, 512 bytes per warp) each warp keeps in flight in registers.
// Little's law on the H200: ~4.3 TB/s x ~1 us loaded latency / 132 SMs = ~32 KB per SM; with
// ~20 resident warps, 4 chunks per warp keep ~46 KB in flight. Costs 5 registers per chunk. A warp
// with two weight tiles keeps half as many chunks of each (the same bytes). A ring in shared
// memory (per-lane cp.async, 4-8 chunks, no register cost) measured slower on every shape: bytes in
// flight were not the limit, each warp's chain is. So was
// asking for a CTA's whole slice at once into shared memory before the grid-dependency wait, by
// bulk copies or cp.async, where the weight fits in one wave: 1.2-1.6x slower on the three mid
// shapes; and so were
// three ways of staging some of each warp's chunks in shared memory before the wait beside this
// ring, and the activations of M <= 8 in shared memory: read-only kernels
// of this grid show the wait costs ~0.4-0.5 us per call and the compute chain ~1.3-1.4 (12288x4096,
// M = 1), and the kernel's instruction issue is a large share of its time (~72 per 16x64
// tile-chunk), so compute moved after the wait is exposed. Three and four activation tiles keep
// 2 chunks: 4 (160-166 registers instead of 127-138) was level where the CTAs per SM held
// (12288x4096 M = 25-32 -4%, 6144x4096 +1%) and 3-72% slower where it cost CTAs
//; their weights through a per-warp cp.async ring
// were 1.25-1.6x slower, and L2 prefetches 6 chunks ahead 2-20%.
constexpr int weight_chunks_in_flight(int m_tiles) { return m_tiles <= 2 ? 4 : 2; }

// For one activation tile, occupancy beats prefetching activations: without the second buffer
// the kernel fits 80 registers, so 24 warps per SM are resident instead of 20 (measured: 12288 x
// 4096, M = 1, 11.5 -> 10.4 us). With two to four tiles the prefetch is kept (80 registers would
// spill; for four tiles it took M = 24 from 25.8 to 19.4 us on 12288 x 4096, 92 to 82 on 28672 x 8192;
// without it four tiles fit 77-86 registers, three times the warps, and still lost 30-65% where
// few warps run; two tiles without it, 2-17%).
constexpr bool prefetch_activations(int m_tiles) { return m_tiles >= 2 && m_tiles <= 4; }

// The four-tile kernel (M = 25-32) is compiled twice: unbounded (138 registers: one 8-warp or
// three 4-warp CTAs per SM) and bounded to leave room for kRegisterBoundedWarpsPerSm warps per SM
// (128 registers, 8 bytes of spills: two 8-warp or four 4-warp CTAs). Neither wins everywhere.
// H200, M = 25/32, one run: where the bounded form's grid keeps more warps resident per SM it won, 4096x12288
// 20.3/20.7 -> 16.5/18.2 us (1x8 at two CTAs per SM against 2x4 at one), 4096x4096 8.1/8.2 ->
// 7.2/7.7, 5120x4096 13.8/14.3 -> 10.9/11.5 (1.21x the warps), 3072x4096 8.8/9.1 -> 8.0/8.6; where
// both grids keep the same warps it lost by 2-13% (12288x4096 17.7 -> 18.8, 2048x8192 8.1 -> 9.2,
// 6144x4096, 6144x8192, 10240x8192, 12288x8192). Where its warps stream only 4 chunks each it
// lost with twice the warps: 4096x2048 4.9/5.0 -> 5.0/5.2. The same again on the final build
//. So the bounded form is taken where its grid keeps more than
// kMinRegisterBoundedWarpGain times the warps per SM and its warps stream at least
// kMinRegisterBoundedChunksPerWarp chunks each (choose_launch_shape, with the occupancy).
inline constexpr int kRegisterBoundedMTiles = 4;  // the activation tiles that have a register-bounded kernel
inline constexpr int kRegisterBoundedWarpsPerSm = 16;
inline constexpr double kMinRegisterBoundedWarpGain = double(selection_rule("kMinRegisterBoundedWarpGain"));
inline constexpr int kMinRegisterBoundedChunksPerWarp = 8;

// Warps per SM the register allocation must leave room for (__launch_bounds__' minimum CTAs): 24
// (80 registers) for one activation tile in CTAs of one weight tile per warp or of 8 warps; no
// bound otherwise.
// - One activation tile and two weight tiles in 4-warp CTAs: ptxas picks 72 registers unbounded,
//   without spills, and M = 1 on 28672x8192 depends on it: its 896 CTAs of 4 warps fit one wave
//   only at 7 CTAs per SM. A build whose extra code took this kernel to 80 registers (6 CTAs per
//   SM, two waves) ran 43.3 us against 33.3. Bounding it to
//   28 warps does not guard that (ptxas then spills 36 bytes at 72); the GPU test
//   OneTokenShapeOfTheLargestIssueWeightKeepsSevenCtasPerSm does.
// - Two or more activation tiles: at 96 registers (5 CTAs of 4 warps) M = 16 spilled 104 bytes
//   and ran 44.8 -> 66.1 us.
// - Four activation tiles in their register-bounded form (LaunchShape::register_bounded):
//   kRegisterBoundedWarpsPerSm.
constexpr int min_resident_warps(int m_tiles, int cta_warps, int tiles_per_warp, bool register_bounded = false) {
  if (register_bounded) return kRegisterBoundedWarpsPerSm;
  return m_tiles == 1 && (tiles_per_warp == 1 || cta_warps == 8) ? 24 : 0;
}

// Whether the kernel's steady loop runs two ring rounds per iteration. A slot's refill lands in
// other registers than the chunk it replaces (both are live while that chunk is decoded); over two
// rounds the registers come back to where they started, so the ~20 register moves at the loop's
// back edge go (SASS: 7-12% fewer instructions per MMA). H200, against one round
// M = 16 28672x8192 43.8 -> 38.7 us, 4096x12288
// 12.1 -> 11.6, 12288x4096 10.7 -> 10.5; M = 4 12288x4096 8.9 -> 8.6; the one-tile, one-tile-per-
// warp kernels unchanged within noise (4096x4096, 4096x12288 M = 1 and 4: -0.3 to +1.1%).
// Three activation tiles take it at no cost in CTAs per SM (114 -> 126-127 registers, both at most
// 128). Not for four activation tiles (138 -> 170 registers, one CTA per SM fewer), nor for 4-warp CTAs
// of one activation tile and tile pairs: they keep 7 CTAs per SM only at 72 registers, which two
// rounds reach only with 16 bytes of spills (28672x8192 M = 1 and 4 were 0.7-1.6% slower so).
constexpr bool two_rounds_per_iteration(int m_tiles, int cta_warps, int tiles_per_warp) {
  return m_tiles != 4 && !(m_tiles == 1 && tiles_per_warp == 2 && cta_warps == 4);
}

// The CTA shape rule for M <= 32 (sm80_nvfp4_mma_tuning.cpp): chunks each warp should stream, the fewest
// warps per SM the grid should offer, CTA size bounds. Fitted to the H200 sweep (bench/results/).
inline constexpr int kChunksPerWarp = 32;
constexpr int min_grid_warps_per_sm(int m_tiles) { return m_tiles == 1 ? 16 : 11; }  // ~2/3 of the resident warps
// Two weight tiles per warp (sharing each activation load) for M <= 8 * kMaxPairedMTiles, when the
// grid of tile pairs still offers min_grid_warps_per_sm. H200 sweep:
// 28672x8192 M = 1 39.5 -> 34.7 us, M = 16 53.1 -> 45.1; 12288x4096 M = 1 10.3 -> 9.9, M = 16
// 13.9 -> 11.8; where the pairs leave too few warps it loses (4096x12288 M = 1 10.6 vs 13.6), so
// N = 4096 keeps one tile per warp. (Three and four activation tiles: kMinManyTilePairWarpsPerSm.)
inline constexpr int kMaxPairedMTiles = 2;
inline constexpr int kMinWarpsK = 2;
// Two activation tiles in tile pairs split K at least 4 ways. The 2-way split arose only on tall
// weights of at most 64 chunks (N >= 23232, K <= 4096), and lost there to 4 ways at M = 16: 28672x4096
// 23.83 -> 21.83 us, 37888x3584 30.85 -> 26.43.
inline constexpr int kMinPairedTwoTileWarpsK = 4;
inline constexpr int kMaxWarpsK = 8;
// One activation tile and one weight tile per warp, where even 8 K-warps per tile leave the grid
// short of min_grid_warps_per_sm (N = 4096: 256 CTAs of 8 warps fill 0.65 of the H200's slots):
// K is split 12 ways instead, so 2 CTAs of 12 warps fill the 24 resident warps per SM and the
// grid fills the GPU (programmatic dependent launch then applies), provided each warp keeps at
// least kMinChunksPerWideWarp chunks and the 12-warp grid does fill kProgrammaticMinSlotFraction
// of the GPU. H200, M = 1: 4096x1536 (2 chunks
// per warp) 3.38 -> 2.49 us; where 12 K-warps still leave the GPU short, 8 were faster: 2048x4096
// 4.84 -> 4.60, 1536x4096 4.52 -> 4.32 (repeat noise ~2%). One chunk per warp is enough: 4096x1024
// (16 chunks, 1-2 per warp) M = 1/4 2.75/2.78 -> 2.15/2.18 us, the 8-way grid filling 0.65 of the
// slots and so launching without PDL. M = 2-8 on
// 4096x1536 take 12 ways too, unmeasured.
inline constexpr int kWideWarpsK = 12;
inline constexpr int kMinChunksPerWideWarp = 1;
// Tile pairs split K kPairedWideWarpsK ways in CTAs of one pair (one per SM: 82 registers, 128 at
// two activation tiles) where the pairs are too few for the usual splits (N around 4096) but cover
// kPairedWideMinSmFill of the SMs in one wave and each warp streams kMinChunksPerPairedWideWarp
// chunks or more: each activation load serves 32 rows, each warp runs two MMA chains. One
// activation tile splits kPairedWiderWarpsK ways past kMaxChunksPerPairedWideWarp chunks a warp.
// H200, against the old rule's single tiles in one run: M = 1/4/8 4096x4096 4.73/4.80/4.87 -> 4.22/4.32/4.39 us, 4096x8192 7.35 -> 6.62,
// 4096x14336 10.74 -> 10.15, 4096x12288 level; 24 ways 4096x16384 11.84 -> 11.12; 3584x3584 (112
// pairs, no PDL) 5.48 -> 5.15; M = 16 4096x12288 11.51 -> 10.60, 3584x8192 9.65 -> 8.79. Two
// chunks a warp (K = 2048) lost 5-10%, three were level; 136 pairs (two waves) lost 20-25%.
inline constexpr int kPairedWideWarpsK = 16;
inline constexpr int kPairedWiderWarpsK = 24;
inline constexpr double kPairedWideMinSmFill = 0.84;    // 112 pairs of 132 SMs
inline constexpr int kMinChunksPerPairedWideWarp = 3;   // K >= 3072 at 16 ways
inline constexpr int kMaxChunksPerPairedWideWarp = 14;  // one activation tile: K <= 14336 at 16 ways
// Two activation tiles and two weight tiles per warp (116-122 registers): an SM holds 4 CTAs of 4
// warps, or kFiveWarpCtasPerSm of 5. Where the tile pairs fill 90-100% of kFiveWarpCtasPerSm x SMs
// CTAs (and so leave 4 x SMs short), K is split 5 ways instead of 4: the grid then fills the GPU
// and takes PDL. H200: 12288x4096 M = 16 11.7 ->
// 10.7 us (384 pairs); split 6 or 8 ways it took 14.7 and 12.6. On 28672x8192 (896 pairs, 1.7
// waves of 4-warp CTAs) 5 ways was slower (47.5 vs 43.4), hence the upper bound.
inline constexpr int kFiveWarpCtasPerSm = 3;
inline constexpr int kPairedFillWarpsK = 5;
inline constexpr int kMinCtaWarps = 4;

// A CTA is warps_n x warps_k warps: warps_n weight-row tiles (16 rows each) side by side, sharing
// activation loads through L1; warps_k warps splitting K, reduced through shared memory. With
// cluster_k > 1, cluster_k CTAs of one cluster share the same rows and split K between them too
// (warps_k x cluster_k ways), summed through distributed shared memory.
struct LaunchShape {
  int m_tiles;   // activation tiles of 8 rows: activation_tiles(M)
  int warps_n;
  int warps_k;
  int tiles_per_warp = 1;  // weight tiles of 16 rows each warp multiplies with one activation load
  bool register_bounded = false;  // four activation tiles only: the form bounded to kRegisterBoundedWarpsPerSm
  int cluster_k = 1;
};
inline constexpr int kMaxDecodeClusterK = 8;  // the portable cluster size

// Few weight rows: a CTA covers whole row tiles, so a weight of R rows runs at most R / 16 CTAs and
// leaves SMs idle, each warp streaming its chunks one after another (H200, M = 1, same bytes,
// 512x4096 in 32 CTAs 4.0 us, 4096x512 in 256 CTAs 2.4).
// Where the rule grid of one or two activation tiles (M <= 16) fills at most kMaxClusteredRuleSmFill
// (half) of the SMs and K holds kMinClusteredChunks chunks or more, K is split over clusters too: 1 x
// kClusteredWarpsK warps per CTA, the largest cluster (a power of two, at most kMaxDecodeClusterK)
// whose grid stays within max_clustered_ctas_per_sm CTAs per SM and leaves each warp
// kMinChunksPerClusteredWarp chunks. H200, M = 1 / 8, same run, against the unclustered rule: 512x8192 (8-CTA
// clusters) 5.98 / 6.13 -> 3.79 / 4.00 us, 512x4096 (4) 4.19 / 4.28 -> 3.53 / 3.61, 256x4096 (4)
// 3.83 / 3.93 -> 3.12 / 3.18, 1024x8192 (4) 6.23 / 6.36 -> 5.30 / 5.58, 1024x4096 (4) 4.32 / 4.41
// -> 3.98 / 4.14. Left alone because clusters lost: K = 2048 (1024x2048 3.02 -> 3.26 with 2-CTA
// clusters) and rule grids of 96 CTAs or more (1536x4096, 2048x4096: 1.00-1.3x; 2048x8192 and
// 3072x4096 gained 4-11% with 2-CTA clusters at M = 1, but 3072x4096 lost 35% at M = 16). The
// clustered grids take PDL at any fill (programmatic_at_any_fill), which gained as much again
//. Two activation tiles (two 8-warp CTAs per SM at 126 registers) want smaller grids: M =
// 9 / 16, clusters with PDL against the rule (unclustered, no PDL), same run: 256x8192
// (8) 6.09 / 6.21 -> 3.21 / 3.56 us, 512x16384 (4) 10.10 / 10.27 -> 5.43 / 5.87, 512x8192 (4)
// 6.20 / 6.31 -> 3.72 / 4.26, 256x4096 (4) 3.73 / 3.84 -> 2.64 / 2.88, 768x4096 (4) 4.17 / 4.26
// -> 3.30 / 3.69, 1024x8192 (2) 6.41 / 6.57 -> 5.20 / 5.48, 1024x16384 (2) 10.34 / 10.56 -> 7.71 /
// 8.30, 1024x4096 (2) 4.26 / 4.34 -> 3.55 / 3.89; grids of 256 CTAs ran 1.4-2x slower (1024 rows
// in clusters of 4, 512 rows of 8). Missed by the half-of-the-SMs bound: 1536x4096 (96 CTAs), 2-CTA
// clusters 0.88-0.95.
inline constexpr int kClusteredWarpsK = int(selection_rule("kClusteredWarpsK"));
inline constexpr double kMaxClusteredRuleSmFill = double(selection_rule("kMaxClusteredRuleSmFill"));
inline constexpr int kMaxClusteredMTiles = int(selection_rule("kMaxClusteredMTiles"));
inline constexpr std::int64_t kMinClusteredChunks = std::int64_t(selection_rule("kMinClusteredChunks"));  // K >= 4096
inline constexpr int kMinChunksPerClusteredWarp = int(selection_rule("kMinChunksPerClusteredWarp"));
inline constexpr double kMaxClusteredCtasPerSmOneTile = selection_rule("kMaxClusteredCtasPerSmOneTile");
inline constexpr double kMaxClusteredCtasPerSmTwoTiles = selection_rule("kMaxClusteredCtasPerSmTwoTiles");
constexpr double max_clustered_ctas_per_sm(int m_tiles) {
  return m_tiles == 1 ? kMaxClusteredCtasPerSmOneTile : kMaxClusteredCtasPerSmTwoTiles;
}

// Tile pairs of three or four activation tiles (one_wave_tile_pairs, kMinManyTilePairWarpsPerSm).
constexpr bool is_many_tile_pair(const LaunchShape& shape) { return shape.tiles_per_warp == 2 && shape.m_tiles > kMaxPairedMTiles; }

// CTAs of a shape's compiled kernel one SM of the GPU at hand holds at once (its occupancy); 0
// when the shape is not compiled or CUDA cannot say. The launcher passes
// decode_gemm_resident_ctas_per_sm; host-only callers (a simulated GPU) have none.
using ResidentCtasPerSm = std::function<int(const LaunchShape&)>;

// A grid of more than one and at most kMaxTailWaves waves of the GPU's resident CTA slots runs its
// second, partial wave with most SMs idle. Where the rule's shape does that, the first of these
// that fits one wave is taken instead: tile pairs (half the CTAs), else half the K-warps per CTA
// (more CTAs per SM; where that leaves 2 K-warps, CTAs of 2x2 warps, half as many). H200, M = 1
// 8192x8192 1x8 at 1.29 waves
// 14.33 us, 1x8x2 at 0.65 12.19; 8192x28672 1x8 (1.29) 40.83, 1x8x2 35.23 (1x12 at 1.94 35.16);
// 14336x4096 1x8x2 (1.13) 12.76, 1x4x2 (0.48) 11.89; M = 16 10240x8192 1x8x2 (1.21) 19.08, 1x4x2
// (0.61) 18.10. Grids of 1.7-1.9 waves were the fastest of their problem twice in the same sweep
// (28672x4096 M = 16, 8192x28672 M = 1) but lost in two others (10240x8192 M = 1 1x8 at 1.62,
// 8192x8192 M = 1 1x12 at 1.94): the bound is a judgement between them. This rule and two
// ring rounds together, against neither: every changed shape 3-25% faster; where two rounds
// leave both kernels alone, the four-tile rows, 8192x8192 M = 32 35.8 -> 29.0 us, 7168x7168 31.7
// -> 25.6, 3072x4096 9.4 -> 9.0.
inline constexpr double kMaxTailWaves = double(selection_rule("kMaxTailWaves"));
// Three and four activation tiles (M = 17-32), where no tile pairs fit one wave (below): where
// their rule grid runs more than kMaxTailWaves and at most
// kMaxRowPairWaves waves, CTAs of twice the rows with half the K split are taken when they fit one:
// the same warps per CTA, half the CTAs, and each activation load of a K slice serves two warps
// through L1. H200, M = 17/32, four tiles forced against the rule in one run
// on 4096 rows the rule's 1x8 grid runs 1.94 waves
// at one CTA per SM, 2x4 0.97: 4096x2048 6.2/6.6 -> 4.8/5.0 us, 4096x4096 9.3/9.8 -> 8.0/8.2,
// 4096x8192 15.4/16.2 -> 14.0/14.5, 4096x12288 21.6/23.1 -> 19.9/20.6, 4096x16384 27.5/29.4 ->
// 25.8/26.7. Where 2x4 would still need two waves it lost (5120x4096 at 2.42 waves: 14.9/15.6 vs
// 13.4/14.3). Up to kMaxTailWaves the half-K alternative stays first, as for fewer tiles: three tiles
// on 5120x4096 (1.21 waves), M = 20/24, 1x4 9.0/9.2 against 2x4 10.7/11.2; four tiles on
// 3072 rows (1.45 waves) were within 2-3% either way (3072x4096 8.6/9.1 against 8.4/8.8).
inline constexpr int kMaxRowPairMTiles = 4;  // from kMaxPairedMTiles + 1
inline constexpr double kMaxRowPairWaves = double(selection_rule("kMaxRowPairWaves"));
// Three and four activation tiles have tile pairs too (a ring of two chunks of
// pairs: 159-171 registers, 8-12 warps per SM): each activation load then serves two weight tiles,
// half the L1 work that binds these kernels. They pay where a
// pair shape (1x8, 1x4 or 2x2) fits its grid in one wave at kMinManyTilePairWarpsPerSm or more
// resident warps per SM (choose_launch_shape takes the one with the most). H200, M = 24/32
// against the rule: 4096x4096 6.35/7.85 -> 6.10/7.10 us, 4096x12288 14.42/18.42 -> 13.70/16.56,
// 8192x8192 (M = 24) 18.56 -> 17.86, 12288x4096 (M = 24) 16.08 -> 12.10, 16384x4096 (M = 24)
// 19.16 -> 17.97; with fewer warps they lost (4608x3584 and 6144x4096, 5.8 warps per SM or 1.1-1.5
// waves: 7-23% slower)., three tiles at M = 17-22: at 7.8 warps per SM (4096, 8192 and
// 16384 rows) the pairs lost up to 4.5% at M = 17-18 and broke even at M = 20 (0.98-1.00, 0.96 at
// M = 22): with few activation rows the third tile is mostly padding and the single tiles' 16
// warps per SM win. Where the pair grid keeps 9.7-11.6 warps per SM (10240x8192, 12288x4096) they
// won at every M (0.75-0.83). So below kMinManyTilePairsM rows the pairs need
// kMinShortManyTilePairWarpsPerSm warps per SM.
inline constexpr double kMinManyTilePairWarpsPerSm = 7.5;
inline constexpr int kMinManyTilePairsM = 20;
inline constexpr double kMinShortManyTilePairWarpsPerSm = 9.5;
constexpr double min_many_tile_pair_warps_per_sm(std::int64_t m) {
  return m >= kMinManyTilePairsM ? kMinManyTilePairWarpsPerSm : kMinShortManyTilePairWarpsPerSm;
}
// Four activation tiles: where the rule's 1x8 grid (one 8-warp CTA per SM) runs more than
// kMaxRowPairWaves waves, half the K split in 4-warp CTAs (three per SM) is taken if it fits
// kMaxRowPairWaves and keeps each warp at most kChunksPerWarp chunks, ahead of the
// register-bounded forms. H200, M = 32, one run,
// 1x4 against 1x8 and the bounded 1x8: 4352x4096 10.97 / 14.04 / 12.04 us, 4608x3584 10.10 /
// 13.59 / 13.48, 4608x8192 19.36 / 23.24 / 20.52; 5120x8192 19.32 against the bounded 1x4's 19.60.

// Waves of the shape's grid of `ctas` CTAs on `resident_ctas_per_sm` x `multiprocessors` slots; 0
// when the occupancy is unknown.
constexpr double grid_waves(std::int64_t ctas, int resident_ctas_per_sm, int multiprocessors) {
  return resident_ctas_per_sm > 0 && multiprocessors > 0 ? double(ctas) / (double(resident_ctas_per_sm) * multiprocessors) : 0.0;
}

// Picks the shape for a problem on a GPU with `multiprocessors` SMs. `programmatic`: whether the
// launch may use PDL (programmatic_launch_policy is not off); the 5- and 12-way K splits
// (kPairedFillWarpsK, kWideWarpsK) exist only to fill the GPU for PDL and measured slower without
// it on two of the three rows (12288x4096 M = 16 11.7 -> 12.0 us, 4096x4096 M = 1 5.45 -> 5.8), so
// they are used only then. Weights of few rows split K over clusters (kClusteredWarpsK), measured
// with PDL and only then too (clusters, like PDL, need SM 9.0). With
// `resident_ctas_per_sm`, a grid of more than one wave is
// replaced as kMaxTailWaves and kMaxRowPairWaves say, and four activation tiles take the
// register-bounded form where kMinRegisterBoundedWarpGain says; without it the shape is the rule's
// alone (unbounded).
LaunchShape choose_launch_shape(std::int64_t m, std::int64_t n, std::int64_t k, int multiprocessors, bool programmatic,
                                const ResidentCtasPerSm& resident_ctas_per_sm = nullptr);

// CTAs of the mma.sync kernel's grid for N weight rows (the launcher and `explain` both use it).
std::int64_t grid_ctas(const LaunchShape& shape, std::int64_t n);

// Waves of `shape`'s grid for N weight rows at the occupancy `resident_ctas_per_sm` gives it (0
// when unknown).
double shape_waves(const LaunchShape& shape, std::int64_t n, int multiprocessors, const ResidentCtasPerSm& resident_ctas_per_sm);
// Warps of `shape`'s grid resident per SM on average, at its occupancy (0 when unknown).
double resident_warps_per_sm(const LaunchShape& shape, std::int64_t n, int multiprocessors, const ResidentCtasPerSm& resident_ctas_per_sm);

// Tuning knob for measurements only:
// FP4GEMM_DECODE_SHAPE="warps_n:warps_k[:tiles_per_warp[:bounded[:cluster_k]]]" overrides the CTA
// shape (m_tiles still follows M; bounded 1 takes the register-bounded form, 0 or absent the
// unbounded one; cluster_k 1-kMaxDecodeClusterK CTAs per cluster, 1 when absent). Returns false when
// unset; throws on a malformed value, and on bounded 1 where `shape.m_tiles` is not 4 (the only
// register-bounded kernel).
bool shape_override(LaunchShape& shape, const Overrides& overrides = Overrides::from_environment());

// Programmatic dependent launch (PDL, programmatic_launch.cuh): a call's kernel is scheduled while
// the previous kernel on the stream finishes and starts streaming its weights. Measured on the H200
// in the bench's CUDA graphs, once the mma.sync kernel
// issues its first weight loads before anything else:
// - it pays where the grid fills the GPU's resident CTA slots, the next grid's CTAs then taking
//   each slot as it frees: M = 1 12288x4096 9.67 -> 8.58 us, 28672x8192 34.4 -> 33.4, M = 16
//   4096x12288 13.2 -> 12.0, 4096x4096 6.63 -> 5.62;
// - it costs where the grid leaves slots free: the next grid's first CTAs take them at once and
//   wait there, the rest start late (M = 1 4096x12288 10.55 -> 11.71 us at 0.65 of the slots,
//   M = 16 12288x4096 11.7 -> 12.4 at 0.73). The one miss of the rule: 4096x4096 at M = 1 (0.65)
//   would gain 9%.
// - The wgmma kernel lets the next kernel in only once its main loop is done (letting it in
//   at the start was 37% slower with PDL); then 1-3% faster at M = 32 and 64 on 28672x8192 and
//   12288x4096, so it always uses PDL when the policy is not off. A grid that fits the SMs runs
//   one CTA per SM so that the next grid's early CTAs cannot crowd (wgmma_one_cta_per_sm).
// FP4GEMM_PDL=1 turns it on for every launch, 0 off (any other value throws); unset, the policy is
// when_grid_fills. Before SM 9.0 it is off (griddepcontrol is SM 9.0 and newer).
enum class ProgrammaticLaunch { off, on, when_grid_fills };
ProgrammaticLaunch programmatic_launch_policy(int sm, const Overrides& overrides = Overrides::from_environment());

// The fraction of the GPU's resident CTA slots (CTAs per SM from the kernel's occupancy, times
// SMs) a grid must fill for when_grid_fills to launch it with PDL.
inline constexpr double kProgrammaticMinSlotFraction = double(selection_rule("kProgrammaticMinSlotFraction"));
constexpr bool grid_fills_gpu(std::int64_t ctas, int resident_ctas_per_sm, int multiprocessors) {
  return resident_ctas_per_sm > 0 && double(ctas) >= kProgrammaticMinSlotFraction * resident_ctas_per_sm * multiprocessors;
}
// Except the clustered grids of few-row weights (kClusteredWarpsK), which fill at most two thirds
// of the slots yet gain from PDL at every size the rule gives them. H200, M = 1 / 8, same run, PDL
// forced against the rule without it: 512x4096 3.53 /
// 3.62 -> 2.74 / 2.99 us, 512x8192 3.99 / 4.20 -> 3.21 / 3.48, 256x4096 3.12 / 3.17 -> 2.43 / 2.56,
// 1024x4096 3.97 / 4.13 -> 3.19 / 3.38, 1024x8192 5.23 / 5.53 -> 4.15 / 4.20, 512x16384 5.31 /
// 5.62 -> 4.14 / 4.32, 768x4096 3.64 / 3.75 -> 2.93 / 3.12.
constexpr bool programmatic_at_any_fill(const LaunchShape& shape) { return shape.cluster_k > 1; }

// Tile pairs of three or four activation tiles (M = 17-32) whose grid for N rows fits one wave at
// the most resident warps per SM, at least min_many_tile_pair_warps_per_sm(M); none for other M,
// where none qualifies, or without the occupancy. choose_launch_shape takes them first; the kernel
// switch weighs them against wgmma (kernel_switch.hpp).
std::optional<LaunchShape> many_tile_pairs_in_one_wave(std::int64_t m, std::int64_t n, int multiprocessors,
                                                       const ResidentCtasPerSm& resident_ctas_per_sm);

}  // namespace fp4gemm::cuda_nvfp4
