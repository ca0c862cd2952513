#include "backends/cuda_decode/decode_tuning.hpp"

#include <cstdio>
#include <cstdlib>
#include <string>

#include "fp4gemm/error.hpp"

namespace fp4gemm::cuda_decode {

LaunchShape choose_launch_shape(std::int64_t m, std::int64_t n, std::int64_t k, int multiprocessors) {
  LaunchShape shape;
  const std::int64_t tiles_needed = (m + 7) / 8;
  shape.m_tiles = tiles_needed <= 1 ? 1 : tiles_needed <= 2 ? 2 : tiles_needed <= 4 ? 4 : 8;
  // Measured on one H200 (scripts/decode_shape_sweep.sh, bench/results/2026-11-30-h200-cuda-decode.md):
  // for up to 2 activation tiles, 1 x 8 (one 16-row tile, K split 8 ways) was fastest or within
  // 3% on all four issue-3 shapes; for 8 tiles, 2 x 4 was fastest. N, K and the SM count did not
  // change the winner over the shapes measured.
  // NOTE: every shape returned here must be compiled (FP4GEMM_DECODE_SHAPES in the .cu file).
  if (shape.m_tiles <= 2) {
    shape.warps_n = 1;
    shape.warps_k = 8;
  } else {
    shape.warps_n = 2;
    shape.warps_k = 4;
  }
  (void)n;
  (void)k;
  (void)multiprocessors;
  return shape;
}

bool shape_override(LaunchShape& shape) {
  const char* text = std::getenv("FP4GEMM_DECODE_SHAPE");
  if (text == nullptr || *text == '\0') return false;
  int warps_n = 0, warps_k = 0;
  if (std::sscanf(text, "%d:%d", &warps_n, &warps_k) != 2 || warps_n < 1 || warps_k < 1) {
    throw_invalid(std::string("FP4GEMM_DECODE_SHAPE must look like 2:4 (warps_n:warps_k), not '") + text + "'");
  }
  shape.warps_n = warps_n;
  shape.warps_k = warps_k;
  return true;
}

}  // namespace fp4gemm::cuda_decode
