#pragma once
// The H200's occupancy of the compiled mma.sync kernels, for the host tests of the rules that weigh
// a grid's waves (no GPU needed).
#include "backends/cuda_nvfp4/mma_small_m/sm80_nvfp4_mma_tuning.hpp"

#include <array>

namespace fp4gemm::cuda_nvfp4 {

// The H200's occupancy of the compiled kernels (ptxas registers -> CTAs per SM; what
// decode_gemm_resident_ctas_per_sm answered there), for the wave rule on a host without a GPU.
inline int h200_resident_ctas_per_sm(const LaunchShape& shape) {
  const int warps = shape.warps_n * shape.warps_k;
  if (shape.m_tiles == 1) return shape.tiles_per_warp == 2 && warps == 4 ? 7 : 24 / warps;  // 72 and 80 registers
  if (is_many_tile_pair(shape)) return (shape.m_tiles == 3 ? 12 : 8) / warps;  // 159-162 and 171
  if (shape.m_tiles == 2 || shape.m_tiles == 3 || shape.register_bounded) return 16 / warps;  // 126-128 registers
  return shape.m_tiles == 4 ? 12 / warps : 14 / warps;                                         // 138 and 143
}

// The same without the tile pairs of three and four activation tiles (occupancy unknown: never
// taken), for the rules they come before (ThreeAndFourActivationTilesTakeTilePairs... tests them).
inline int h200_resident_ctas_per_sm_without_many_tile_pairs(const LaunchShape& shape) {
  return is_many_tile_pair(shape) ? 0 : h200_resident_ctas_per_sm(shape);
}

// The same without the register-bounded four-tile kernel either.
inline int h200_unbounded_resident_ctas_per_sm(const LaunchShape& shape) {
  return shape.register_bounded ? 0 : h200_resident_ctas_per_sm_without_many_tile_pairs(shape);
}

inline std::array<int, 3> fields_of(const LaunchShape& shape) { return {shape.warps_n, shape.warps_k, shape.tiles_per_warp}; }

}  // namespace fp4gemm::cuda_nvfp4
