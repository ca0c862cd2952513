#pragma once
// Grids of the `cuda_nvfp4` wgmma kernel (SM 9.0 only; sm90_nvfp4_wgmma_gemm.cu): its pipeline, its
// clusters of K splits, and the stream-K grid that replaces them where they would leave SMs idle.
// Where the wgmma kernel runs instead of mma.sync is the kernel switch's (sm80_nvfp4_mma_tuning.hpp). Each
// tuned constant is defined once, with its measurement (bench/results/, dated files; H200).
#include <cstdint>

#include "backends/cuda_nvfp4/overrides.hpp"
#include "backends/cuda_nvfp4/selection_rules.hpp"
#include "backends/cuda_nvfp4/wgmma_small_m/sm90_nvfp4_wgmma_stream_k.hpp"

namespace fp4gemm::cuda_nvfp4 {
// Pipeline stages per CTA: each holds one chunk's weight codes and scales for the CTA's rows and
// the chunk's activations, filled by bulk copies (bytes in flight cost no registers). Measured at
// one CTA per SM: 8, 12 and 16 tie; 8 still leaves
// room for two CTAs per SM, which grids of more 128-row CTAs than SMs use.
inline constexpr int kWgmmaStages = 8;
// Shared memory one CTA may opt in to on SM 9.0 (cudaDevAttrMaxSharedMemoryPerBlockOptin, 227 KiB);
// a grid of one CTA per SM asks for all of it (wgmma_one_cta_per_sm).
inline constexpr std::int64_t kSm90SharedBytesPerBlock = 232448;
// wgmma groups (one chunk each) a consumer warpgroup keeps in flight while it decodes the next
// chunk: it retires a group only when this many newer ones are issued, so the decode of chunk c + 1
// may take up to this many groups' tensor time before the pipe idles. Each costs a fragment set
// of registers (16 a thread), and the stage ring holds a whole number of fragment-set rotations.
// Two were slower wherever they changed anything: H200, M = 48/64, same run, against one
// one-CTA-per-SM grids 7-16% slower with 6 or 12
// stages (12288x4096 M = 64 22.0 -> 25.1 us), 28672x8192 13-21% (108 registers: one CTA per SM).
inline constexpr int kWgmmaGroupsInFlight = 1;
static_assert(kWgmmaStages % (kWgmmaGroupsInFlight + 1) == 0, "each ring round starts at fragment set 0");
// Whether the wgmma kernel's grid of `ctas` CTAs runs one CTA per SM (its shared memory padded
// so that a second never fits). Where the grid fits the SMs, a second resident slot per SM lets the
// next call's CTAs, launched early by PDL once this grid's leave their main loop, pile two onto
// some SMs while others stay idle; each SM's pair then takes about twice as long. H200, M = 64, same
// run: 8192x8192 (128 CTAs of 1:1) 51.5 -> 40.3 us,
// 8192x28672 158.4 -> 123.0; forced shapes: 132 CTAs of 1:1 (8448x4096) 30.2 -> 23.9 (M = 32:
// 24.9 -> 21.4), 96 of 2:1 (12288x4096) 45.5 -> 29.7. Launched without PDL they are placed evenly
// too (40.9, 123.1, 24.6, 30.6 us); the padding keeps PDL. Larger grids were unchanged (then
// 12288x4096's 192 CTAs, M = 64 30.68 -> 30.66 us; 28672x8192 82.77). With 128-row CTAs once
// 64-row ones would not fit (kWgmmaCtasPerSm), this applies to every wgmma weight of up to
// 16896 rows on 132 SMs.
constexpr bool wgmma_one_cta_per_sm(std::int64_t ctas, int multiprocessors) {
  return multiprocessors > 0 && ctas <= multiprocessors;
}
// A cluster is multicast x splits CTAs (neighbouring row blocks sharing activation copies, times K
// splits reduced through distributed shared memory), bounded by the portable cluster size.
inline constexpr int kMaxWgmmaCluster = 8;
// Row blocks that share each activation copy (bulk copy with multicast). Measured on the H200: 2-,
// 4- and 8-CTA groups made every shape 2-5x slower than no multicast; an experiment with one
// release per warp and member CTA instead of one per lane was still 1.6-2.6x slower
//, so the count of remote arrivals is not the cause (not
// diagnosed). The rule does not multicast; FP4GEMM_WGMMA_SHAPE can.
inline constexpr int kWgmmaMulticast = 1;
// Fewest chunks a split should stream (shorter runs do not amortise the pipeline fill).
inline constexpr int kMinWgmmaChunksPerSplit = 8;
// 64-row CTAs while they fit this many per SM (else 128-row ones); then K is split while the
// doubled grid still fits one CTA per SM (choose_wgmma_shape). One: where 64-row CTAs would need a
// second on some SMs, 128-row ones at one per SM were faster on every weight measured (H200, one run,
//; N = 10240-16896): M = 64 12288x4096 29.2-29.5 ->
// 28.0-28.2 us, 10240x8192 51.3-51.4 -> 48.0, 16896x4096 30.0-30.2 -> 28.5-28.6; M = 32 16384x4096
// 29.9 -> 23.7. (Two per SM had been chosen while grids of one CTA per SM were crowded by PDL.)
inline constexpr int kWgmmaCtasPerSm = 1;

// Where the rule above gives unsplit 64-row CTAs (one consumer warpgroup, so one consumer warp per
// scheduler) for a long K, 128-row CTAs with K split in two instead: the same CTA count, two
// warpgroups per SM to overlap each other's decode -> wgmma chain. H200, M = 33/64, same run
// 6144x8192 30.8/30.9 -> 27.3/27.6 us, 8192x8192
// 30.9/31.1 -> 27.8/28.2, 8192x16384 57.4/57.7 -> 47.0/47.8, 8192x28672 96.5/97.2 -> 75.9/79.0.
// 8448 rows, whose 66 two-CTA clusters take every SM, too (8448x16384 57.5 -> 45.2); the
// fit check (2 x ceil(N / 128) <= SMs) is the only row bound. (Four-CTA clusters did not all fit
// at once: 4096 rows at 2:4 ran 2x slower than 1:2.), after the split epilogue lost
// its bank conflicts: 64 and 96 chunks too (6144x4096 17.6/17.7 -> 15.6/15.7, 8192x4096
// 17.7/17.9 -> 15.7/16.0, 6144x6144 24.1/24.3 -> 20.3/20.5); fewer chunks were not measured.
inline constexpr int kWgmmaPairedSplitMinChunks = 64;
// Where unsplit 128-row CTAs would leave SMs idle (fewer CTAs than kWgmmaIdleSplitMaxSmFill x SMs)
// and K holds at least kWgmmaIdleSplitMinChunks chunks, K is split in two although the doubled grid
// no longer fits one CTA per SM: the idle SMs then take the extra CTAs. H200, M = 33/48/64, same
// run: 10240x8192 (80 CTAs) 42.2/42.4/42.7
// -> 40.0/40.1/40.5 us, 12288x8192 (96) 42.3/42.5/42.7 -> 40.2/40.3/40.6, 13312x8192 (104) and
// 14336x8192 (112, 85% of the SMs) 42.4/42.7 -> 40.3/40.9 at M = 33/64. 128 CTAs and more were not
// measured (the bound lies between 112 and 128 of 132). Half as many chunks lost: 12288x4096
// M = 64 28.8 against 23.9.
inline constexpr int kWgmmaIdleSplitMinChunks = 128;
inline constexpr double kWgmmaIdleSplitMaxSmFill = 0.9;

// Where choose_wgmma_shape runs the stream-K grid (stream_k_ctas_per_sm CTAs per SM, each an equal share of the
// (row block, chunk) pairs; sm90_nvfp4_wgmma_stream_k.hpp) instead of the data-parallel one. H200, same
// run, both forced:
// - data-parallel grids that fill less than kWgmmaStreamMaxFill of their waves' slots: 10240x8192
//   (160 CTAs on 264 slots) 0.79-0.83, 12288x4096 (96 on 132) 0.90-0.95, 5120x4096 (80) 0.92-0.97,
//   6144x4096 (96) 0.96-1.00, 24576x4096 (192 on 264) 0.95 at M = 48/64 and level below; fuller ones
//   lost: 8192x8192 and 16384x4096 (128 on 132) 1.02-1.12, 14336x8192 and 28672x8192 (224 on 264,
//   two CTAs per SM where stream-K's 168-register CTAs fit one) 1.02-1.09;
// - data-parallel grids of one warpgroup per SM (4096-row weights, K split in two) over
//   kWgmmaStreamOneWarpgroupMinChunks chunks or more: 4096x12288 0.79-0.89 (two warpgroups per SM
//   instead of one); at 64 chunks, 4096x4096, 0.96-0.98 at M <= 32 but 1.07 at M = 48/64;
// - each CTA must get kWgmmaStreamMinChunksPerCta chunks or more (the split row blocks' fixup is a
//   fixed ~2-3 us a call; 4096x4096 at 15.5 chunks a CTA is the shortest measured).
inline constexpr double kWgmmaStreamMaxFill = double(selection_rule("kWgmmaStreamMaxFill"));
inline constexpr int kWgmmaStreamOneWarpgroupMinChunks = int(selection_rule("kWgmmaStreamOneWarpgroupMinChunks"));
inline constexpr int kWgmmaStreamMinChunksPerCta = 16;
// Stream-K CTAs one SM holds, by token width (the kernel's __launch_bounds__; the grid is this many
// CTAs per SM). The 16- and 32-token stream-K kernels are bounded to two per SM: 96 registers, 0 and
// 64 bytes of spills, all outside the main loop. An SM runs more chunks a microsecond with two CTAs
// than with one, so on 32 tokens grids of 264 CTAs beat both 132 and the data-parallel grid. H200,
// M = 17-32, same run: 28672x8192 0.94 / 1.09, 57344x8192 0.91-0.95 / 1.02-1.05,
// 24576x4096 0.85-0.98 / 0.92-1.06, 20480x4096 0.80-0.96 / 0.97-1.01. Bounded the same way, the
// 64-token kernel spilled 308 bytes and its one-CTA grids ran 37-50% slower, and 264 CTAs of it
// lost 11-36% to the data-parallel grid; it stays at one (168 registers).
constexpr int stream_k_ctas_per_sm(int tokens) { return tokens <= 32 ? 2 : 1; }
// Where stream-K CTAs fit two per SM, the stream-K grid also replaces data-parallel grids of more
// CTAs than SMs (two on some SMs, one on others: the kernel lasts as long as the SMs with two) that
// fill less than this of their waves' slots (28672x8192: 224 CTAs on 264 slots, 85%; the SMs with
// one CTA idled half the kernel, ncu: tensor pipe 25% on them against 50%).
inline constexpr double kWgmmaStreamCrowdedMaxFill = double(selection_rule("kWgmmaStreamCrowdedMaxFill"));
// Data-parallel CTAs of the wgmma kernel one SM holds once the grid no longer fits one per SM
// (registers and shared memory of the 128-row CTAs at every token width on SM 9.0).
inline constexpr int kWgmmaCrowdedCtasPerSm = 2;
// The stream-K grid has 128-row CTAs only: two consumer warpgroups per SM overlap each other's
// decode -> wgmma chain (kWgmmaPairedSplitMinChunks), and three kernels compile instead of six.
inline constexpr int kStreamKWarpgroups = 2;

// A CTA is `warpgroups` consumer warpgroups (64 weight rows each) plus two producer warps, over
// `tokens` (16, 32 or 64) activation rows; a cluster is `multicast` CTAs along N sharing the
// activation copies times `splits` CTAs along K. With stream_ctas > 0 the grid is instead that
// many unclustered CTAs sharing the (row block, chunk) pairs evenly (sm90_nvfp4_wgmma_stream_k.hpp;
// splits and multicast are then 1).
struct WgmmaShape {
  int tokens;
  int warpgroups;
  int splits;
  int multicast = 1;
  int stream_ctas = 0;
};

// The wgmma kernel's grid for an M x N x K problem on `multiprocessors` SMs: the data-parallel
// grid (choose_data_parallel_wgmma_shape), or a stream-K grid of stream_k_ctas_per_sm CTAs per SM
// where that one would leave the SMs idle (kWgmmaStreamMaxFill), run one warpgroup per SM over a
// long K (kWgmmaStreamOneWarpgroupMinChunks) or, where stream-K CTAs fit two per SM, put two CTAs
// on some SMs and one on others (kWgmmaStreamCrowdedMaxFill).
WgmmaShape choose_wgmma_shape(std::int64_t m, std::int64_t n, std::int64_t k, int multiprocessors);
// Which of those reasons holds for the data-parallel grid `data_parallel` (the first, in this
// order), or none: the one source of the rule for choose_wgmma_shape and for explain.
enum class StreamKReason { none, idle, crowded, lone_warpgroups };
StreamKReason stream_k_reason(const WgmmaShape& data_parallel, std::int64_t n, std::int64_t k, int multiprocessors);
// The data-parallel grid alone: CTAs of whole row blocks, K split in clusters (the M = 25-32 rule
// of choose_decode_kernel judges this grid).
WgmmaShape choose_data_parallel_wgmma_shape(std::int64_t m, std::int64_t n, std::int64_t k, int multiprocessors);
// A data-parallel grid's share of the SMs' time on `multiprocessors` SMs (> 0): its CTAs over the
// slots of its waves (one CTA per SM while the grid fits the SMs, else kWgmmaCrowdedCtasPerSm).
double wgmma_grid_fill(const WgmmaShape& shape, std::int64_t n, int multiprocessors);

// CTAs of the wgmma kernel's grid along N for N weight rows, rounded up to whole multicast groups
// (the grid is that times shape.splits).
std::int64_t grid_ctas_along_n(const WgmmaShape& shape, std::int64_t n);
// CTAs of the wgmma kernel's whole grid (along N times the K splits).
std::int64_t wgmma_grid_ctas(const WgmmaShape& shape, std::int64_t n);

// The stream-K partition of a shape with stream_ctas > 0 for an N x K weight: its row blocks and
// chunks, and stream_ctas CTAs at most one per (row block, chunk) pair.
StreamKPartition wgmma_stream_partition(const WgmmaShape& shape, std::int64_t n, std::int64_t k);

// Tuning knobs for measurements only: FP4GEMM_WGMMA_SHAPE="warpgroups:splits[:multicast]" and
// FP4GEMM_WGMMA_STREAM=C (a stream-K grid of C CTAs of kStreamKWarpgroups warpgroups; 0 turns
// the stream-K grid off). Returns false when neither is set; throws on a malformed value (splits
// and multicast must be powers of two; a stream-K grid needs splits = multicast = 1).
bool wgmma_shape_override(WgmmaShape& shape, const Overrides& overrides = Overrides::from_environment());
// The shape the wgmma kernel runs: choose_wgmma_shape's with the knobs applied (`overridden` says
// whether any was set); FP4GEMM_WGMMA_STREAM=0 alone gives the rule's data-parallel grid.
WgmmaShape wgmma_shape_to_run(std::int64_t m, std::int64_t n, std::int64_t k, int multiprocessors, bool& overridden,
                              const Overrides& overrides = Overrides::from_environment());

}  // namespace fp4gemm::cuda_nvfp4
