#pragma once
// The kernel switch of cuda_nvfp4: which of its kernels serves a problem. mma.sync runs on every
// GPU of SM 8.0+; on SM 9.0 the prefill kernel takes M > kMaxActivationRows, and the wgmma kernel
// replaces mma.sync where the rules below hold (thresholds and measurements: selection_rules.hpp).
// select_plan (plan.hpp) asks it once per plan.
#include <cstdint>

#include "backends/cuda_nvfp4/mma_small_m/sm80_nvfp4_mma_tuning.hpp"
#include "backends/cuda_nvfp4/overrides.hpp"
#include "backends/cuda_nvfp4/selection_rules.hpp"
#include "backends/cuda_nvfp4/wgmma_small_m/sm90_nvfp4_wgmma_tuning.hpp"
#include "backends/cuda_nvfp4/wgmma_wide/sm90_nvfp4_wide_tuning.hpp"

namespace fp4gemm::cuda_nvfp4 {

// Where the kernel rules pick wgmma at M <= 32, the tile pairs of three or four activation tiles
// that fit one wave (choose_launch_shape takes them first) run instead (mma.sync) if wgmma's
// own grid splits K and each pair warp streams at most kPairsAheadOfWgmmaMaxChunksPerWarp chunks;
// against a stream-K wgmma grid the pairs also need kMinPairsAheadOfStreamKWarpsPerSm resident
// warps per SM. The pairs skip wgmma's activation pack, pipeline fill and split-K sums; a whole-K
// wgmma grid of one CTA per SM, a long K per warp, or a stream-K grid against few pair warps streams
// faster. Pairs ÷ wgmma, same run:
// - four tiles (M = 25-32), 1x4x2 on 8192 rows (7.8 warps per SM), wgmma split 2 ways in clusters:
//   H200 K = 8192 0.90, 12288 0.93, 16384 0.95, 20480 0.96, 24576 0.97 (96 chunks per
//   warp), 28672 0.98 (112); H100 K = 4096 0.81, 8192 0.91, 14336 0.95, 28672 1.02;
// - four tiles, 2x2x2 on 16384 rows, whole-K wgmma (128 CTAs): H100 K = 2048 0.97, 4096 1.03, 8192
//   1.07; H200 K = 2048 0.95, 4096 0.99;
// - three tiles (M = 17-24), 2x2x2 against the tall band's stream-K wgmma, by the pairs' warps per
//   SM: 11.6 (24576 rows) H200 K = 8192 0.80, 12288 0.87, 14336 0.85, H100 K = 4096 0.75; 10.7
//   (22528) H200 K = 8192 0.89; 9.7 (20480) H200 K = 12288 0.99, 14336 1.00, 16384 1.01, 20480
//   1.04, H100 K = 4096 0.83, 8192 0.91; 8.7 (18432) H200 K = 4096 0.90, 8192 1.02, 12288 1.07,
//   14336 1.09, H100 K = 4096 0.85.
inline constexpr int kPairsAheadOfWgmmaMaxChunksPerWarp = int(selection_rule("kPairsAheadOfWgmmaMaxChunksPerWarp"));
inline constexpr double kMinPairsAheadOfStreamKWarpsPerSm = double(selection_rule("kMinPairsAheadOfStreamKWarpsPerSm"));

// Where the wgmma kernel replaces the mma.sync one on SM 9.0, measured on the H200 with both forced
// on the same shapes in one run. The wgmma kernel costs ~5 us a call more than mma.sync (lone CTAs:
// 4.9 us + 0.21 us a chunk at M = 64), but from 33 tokens mma.sync needs five or more MMA passes per
// weight fragment:
// - M >= 33 and (N >= kWgmmaMinN or N x K >= kWgmmaMinElements): with the epilogue that stores from
//   registers wgmma won on all 16 such weights
//   measured, M = 33/64: 4096x4096 13.3/13.6 vs 15.2/16.2 us, 2048x8192 26.0/26.4 vs 29.7/31.0,
//   8192x1024 7.9/8.1 vs 9.7/11.1, 12288x4096 23.4/23.9 vs 43.7/47.1; and lost on all five below
//   both bounds: 2048x4096 19.2/19.4 vs 16.0/16.9, 4096x2048 9.9/10.2 vs 8.3/9.2, 1024x4096,
//   2048x2048, 4096x1024 (by 18-70%);
// - M = 25-32 (four activation tiles) where the wgmma grid (choose_wgmma_shape, sm90_nvfp4_wgmma_tuning.hpp)
//   has two consumer warpgroups per CTA on at least kWgmmaMinSmFill of the SMs, and K >=
//   kWgmmaFilledMinK. H200,
//   M = 32 (and 17, then also on the four-tile kernel), both kernels forced in one run
// won on every such weight, 128-132
//   CTAs: 8192x4096 13.9 vs 16.0 us, 8192x8192 22.2 vs 28.8, 8192x16384 38.6 vs 58.8, 8192x28672
//   63.0 vs 101.8, 8448x8192, 16384x2048 12.7 vs 18.7; 106-120 CTAs: 6912x4096 13.8 vs 15.8,
//   7168x8192 22.2 vs 28.6, 7680x8192, 14336x4096 20.7 vs 33.1; more than 132:
//   28672x8192 57.3 vs 87.8. Lost where a quarter of the SMs or more sit idle: 96 CTAs, 6144x8192
//   21.9 vs 18.5 and 12288x4096 20.6 vs 19.3; 80 CTAs, 10240x8192 36.4 vs 35.9 (where K >= 8192
//   such grids now split K in two, kWgmmaIdleSplitMinChunks, and then fill the SMs: 10240x8192
//   and 12288x8192 M = 32 on wgmma 32.7 and 32.8 us against mma.sync's 36.5 and 35.7, a tie at
//   M = 25); and where CTAs hold one warpgroup (4096x12288 24.8 vs 20.8). At 1024 columns it lost too (16384x1024 10.9 vs
//   10.5 at M = 17).
// - M = 17-24 (three activation tiles, 126-127 registers against the four-tile kernel's 138): the
//   three-tile kernel beat wgmma on every weight both ran on (M = 17/24): 6912x4096 10.2/11.1
//   vs 13.6/13.7, 7168x4096, 7168x8192 17.3/19.3 vs 22.0/22.1, 7680x8192 16.5/18.4 vs 22.1/22.0,
//   13312x8192 31.4/35.8 vs 36.3/36.4; and on the tall weights up to 20480 rows: 14336x2048 10.6/11.6 vs 12.6/12.6, 14336x4096 17.8/19.8 vs 20.5/20.6,
//   14336x8192 31.8/36.2 vs 36.6/36.8, 16384x2048, 16384x4096 17.0/19.1 vs 20.7/20.7, 20480x4096
//   28.5 vs 30.9 at M = 17 (at M = 24 wgmma by 4%: 31.0 vs 32.4), 24576x8192 48.0/54.0 vs 57.5/57.7
//. wgmma won on every weight of 28672 rows: 28672x8192 by 7-19% (57.5 vs 61.9 at M = 17,
//   57.4 vs 70.9 at M = 24), 28672x4096 31.1/31.3 vs 32.5/37.0, 28672x2048 18.0/18.0 vs 18.7/20.9
//; on 24576x4096 at M = 20-24 only (31.1 vs 34.9 at 24). So M = 17-24 keep mma.sync but
//   from kWgmmaTallMinN rows with K >= kWgmmaTallMinK (misses: 24576x4096 M = 20-24 by 3-11%,
//   20480x4096 M = 24 by 4%). At M <= 16 mma.sync won everywhere (8192x8192 12.0 vs 21.8).
//   Since 32-token wgmma grids of more than one CTA per SM run two stream-K CTAs per SM
//   (kWgmmaStreamCrowdedMaxFill), wgmma also wins from kWgmmaTallStreamMinN rows with K >=
//   kWgmmaTallStreamMinK. H200, same run, wgmma / mma.sync at M = 17/20/24
// 18432x4096 0.89/0.85/0.81, 18432x8192
//   0.88/0.79/0.73, 20480x3072 0.95/0.89/0.83, 20480x4096 0.90/0.84/0.80, 20480x6144 0.93/0.87/0.82,
//   20480x8192 0.90/0.85/0.80, 22528x4096 0.91/0.86/0.81, 24576x4096 0.97/0.92/0.85; misses at
//   M = 17: 24576x6144 1.04, 24576x8192 1.02 (0.90-0.98 at M = 20-24). Left on mma.sync:
//   20480x2048 1.05/1.01/0.96, 24576x2048 1.09/1.03/0.98, and the weights that fit one CTA per SM
//   (16384x4096 1.25/1.18/1.11, 16384x8192 1.21/1.14/1.07, 12288x4096 1.30/1.26/1.20); not
//   measured between 16896 and 18432 rows.
inline constexpr int kWgmmaMinM = int(selection_rule("kWgmmaMinM"));
inline constexpr std::int64_t kWgmmaMinN = std::int64_t(selection_rule("kWgmmaMinN"));
inline constexpr std::int64_t kWgmmaMinElements = std::int64_t(selection_rule("kWgmmaMinElements"));
inline constexpr int kWgmmaFilledMinM = int(selection_rule("kWgmmaFilledMinM"));
inline constexpr std::int64_t kWgmmaFilledMinK = std::int64_t(selection_rule("kWgmmaFilledMinK"));
inline constexpr double kWgmmaMinSmFill = double(selection_rule("kWgmmaMinSmFill"));
inline constexpr int kWgmmaTallMinM = int(selection_rule("kWgmmaTallMinM"));
inline constexpr std::int64_t kWgmmaTallMinN = std::int64_t(selection_rule("kWgmmaTallMinN"));
inline constexpr std::int64_t kWgmmaTallMinK = std::int64_t(selection_rule("kWgmmaTallMinK"));
inline constexpr std::int64_t kWgmmaTallStreamMinN = std::int64_t(selection_rule("kWgmmaTallStreamMinN"));
inline constexpr std::int64_t kWgmmaTallStreamMinK = std::int64_t(selection_rule("kWgmmaTallStreamMinK"));
// - M = 25-32 also from kWgmmaMidStreamMinN rows with K >= kWgmmaMidStreamMinK, whatever the
//   data-parallel grid's fill: the losses above at 80-96 CTAs predate the stream-K grid, which
//   runs two CTAs per SM there. H200, M = 32, both kernels forced in one run
//, wgmma / mma.sync: 9216x4096 0.86,
//   10240x4096 0.90, 10240x5120 0.81-0.82, 11264x5120 0.81, 12288x5120 0.91 (and 9216x8192,
//   10240x8192, 12288x8192 on wgmma already). 12288x4096 moves too, at a tie: 19.52-19.58 against
//   19.35-19.37 us. Below 4096 columns mma.sync stays far ahead
//   (8192x3584 15.64 against 12.09); rows between 8193 and 9215 were not measured.
inline constexpr std::int64_t kWgmmaMidStreamMinN = std::int64_t(selection_rule("kWgmmaMidStreamMinN"));
inline constexpr std::int64_t kWgmmaMidStreamMinK = std::int64_t(selection_rule("kWgmmaMidStreamMinK"));

// The kernels of cuda_nvfp4: mma.sync (any SM 8.0+ GPU, sm80_nvfp4_mma_gemm.cu), and on SM 9.0 the
// wgmma kernel (sm90_nvfp4_wgmma_gemm.cu) and, above kMaxActivationRows, the prefill kernel
// (sm90_nvfp4_prefill_gemm.cu: decoded weights in shared memory as wgmma's B) or the wide one
// (sm90_nvfp4_wide_gemm.cu: weights decoded in registers as wgmma's A, 256 activation rows as B).
enum class DecodeKernel { mma, wgmma, prefill, wide };
const char* decode_kernel_name(DecodeKernel kernel);

// Which kernel cuda_nvfp4 runs for an M x N x K problem on a GPU of SM `sm` (major * 10 + minor)
// with `multiprocessors` SMs (0 when unknown: the M = 25-32 rule then keeps mma.sync). Where the
// rules below pick wgmma at M <= 32, tile_pairs_ahead_of_wgmma may run mma.sync instead (it needs
// the mma.sync kernels' occupancy `resident_ctas_per_sm`).
// FP4GEMM_DECODE_KERNEL=mma|wgmma|prefill|wide overrides the rule for measurements (SM 9.0 only;
// above kMaxActivationRows only prefill or wide run). Above kMaxActivationRows the wide kernel
// runs where wide_rule_holds, else the prefill kernel.
DecodeKernel choose_decode_kernel(std::int64_t m, std::int64_t n, std::int64_t k, int sm, int multiprocessors,
                                  const ResidentCtasPerSm& resident_ctas_per_sm = nullptr,
                                  const Overrides& overrides = Overrides::from_environment());

// Whether the wgmma rules of choose_decode_kernel pick wgmma for an M x N x K problem on SM 9.0
// (M <= kMaxActivationRows), before tile pairs may run ahead of it.
bool wgmma_rule_holds(std::int64_t m, std::int64_t n, std::int64_t k, int multiprocessors);

// Whether the wgmma grid of the problem has two consumer warpgroups per CTA on at least
// kWgmmaMinSmFill of the `multiprocessors` SMs (the M = 25-32 rule of choose_decode_kernel).
bool wgmma_grid_fills_sms(std::int64_t m, std::int64_t n, std::int64_t k, int multiprocessors);

// Whether M and K lie in the band of that M = 25-32 rule (kWgmmaFilledMinM <= M < kWgmmaMinM,
// K >= kWgmmaFilledMinK), where the grid's fill then decides.
constexpr bool in_wgmma_filled_band(std::int64_t m, std::int64_t k) {
  return m >= kWgmmaFilledMinM && m < kWgmmaMinM && k >= kWgmmaFilledMinK;
}

}  // namespace fp4gemm::cuda_nvfp4
