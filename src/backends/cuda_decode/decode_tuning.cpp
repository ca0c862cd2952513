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
  // Widest CTA first: more weight rows share each activation load (through L1). Take it if every
  // SM still gets two CTAs; else narrower. The rest of an 8-warp CTA splits K.
  // NOTE: the widths listed must be compiled shapes (FP4GEMM_DECODE_SHAPES in the .cu file).
  const int few_rows_widths[] = {4, 2, 1};
  const int many_rows_widths[] = {8, 4, 2};
  const int* widths = shape.m_tiles <= 2 ? few_rows_widths : many_rows_widths;
  const std::int64_t row_tiles = (n + 15) / 16;
  shape.warps_n = widths[2];
  for (int i = 0; i < 3; ++i) {
    if (row_tiles / widths[i] >= 2 * std::int64_t(multiprocessors)) {
      shape.warps_n = widths[i];
      break;
    }
  }
  shape.warps_k = 8 / shape.warps_n;
  (void)k;  // K only changes how many chunks each K-warp walks
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
