#pragma once
// Launch configurations of the `cuda_decode` kernel: every tuned constant in one place.
// Measurements behind the choice: bench/results/ (H200, dated files).
#include <cstdint>

namespace fp4gemm::cuda_decode {

// Activation rows are processed in MMA tiles of 8; the kernel is instantiated for this many tiles.
inline constexpr int kMaxActivationRows = 64;

// A CTA is warps_n x warps_k warps: warps_n weight-row tiles (16 rows each) side by side, sharing
// activation loads through L1; warps_k warps splitting K, reduced through shared memory.
struct LaunchShape {
  int m_tiles;   // activation tiles of 8 rows: 1, 2, 4 or 8
  int warps_n;
  int warps_k;
};

// Picks the shape for a problem on a GPU with `multiprocessors` SMs.
LaunchShape choose_launch_shape(std::int64_t m, std::int64_t n, std::int64_t k, int multiprocessors);

// Tuning knob for measurements only: FP4GEMM_DECODE_SHAPE="warps_n:warps_k" overrides the CTA
// shape (m_tiles still follows M). Returns false when unset; throws on a malformed value.
bool shape_override(LaunchShape& shape);

}  // namespace fp4gemm::cuda_decode
