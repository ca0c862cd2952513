#pragma once
// Every tuned constant of the `cpu` backend, in one place. Measurements behind them:
// bench/results/ (2-core AMD EPYC with AVX-512, see the dated cpu files there).
#include <cstdint>

namespace fp4gemm::cpu_tuning {

// Up to this M the fused decode+dot kernel runs; above it, panels of the weight are decoded to
// FP32 and multiplied by OpenBLAS SGEMM. The fused kernel re-reads the activations once per
// weight tile, which stops fitting the caches as M grows; how soon depends on its tile, so there is
// one crossover per tile width (kFusedWeightRowsPerTile* below), measured on 12288x4096:
// - wide (AVX-512): fused beats OpenBLAS on the dequantized weight at every M up to 256 (1.22x at
//   256);
// - narrow (AVX2 and below): fused wins up to M = 31 and the panels from M = 32 (1.9x at 256),
//   except at M = 33-47, where OpenBLAS's blocking of M makes them trade places.
inline constexpr std::int64_t kFusedMaxMWide = 256;
inline constexpr std::int64_t kFusedMaxMNarrow = 31;

// Register blocking of the fused kernel: activation rows x weight rows per tile. The tile's
// accumulators (rows x weight rows vectors) plus the decoded weights (2 per weight row) must fit
// the register file: 32 vector registers with AVX-512, 16 with AVX2 and narrower targets.
inline constexpr int kFusedActivationRowsPerTile = 4;
inline constexpr int kFusedWeightRowsPerTileWide = 4;    // 16 accumulators + 8 weights + 2 activations
inline constexpr int kFusedWeightRowsPerTileNarrow = 2;  // 8 accumulators + 4 weights + 2 activations

// Layout tiles (4 weight rows each) one thread takes at a time in the fused kernels.
inline constexpr std::int64_t kFusedTilesPerTask = 16;

// Up to this M, BF16-exact activations (BF16, NVFP4) go to the AVX512-BF16 kernel
// (cpu_bf16_kernels.hpp) when the CPU has it, instead of the two paths above. Measured on
// 12288x4096: faster than both at every M measured, from
// 0.6 ms at M = 1 to 1.37x OpenBLAS at M = 2048, where its activation re-reads start to tell.
inline constexpr std::int64_t kBf16FusedMaxM = 2048;

// Weight rows decoded to FP32 per SGEMM call in the panel path: 256 rows x K=4096 x 4 B = 4 MiB.
inline constexpr std::int64_t kPanelRows = 256;

}  // namespace fp4gemm::cpu_tuning
