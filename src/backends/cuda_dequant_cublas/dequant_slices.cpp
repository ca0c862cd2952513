#include "backends/cuda_dequant_cublas/dequant_slices.hpp"

#include <algorithm>

namespace fp4gemm {

std::int64_t dequant_slice_rows(std::int64_t rows, std::int64_t cols, std::int64_t workspace_bytes) {
  if (rows <= 0 || cols <= 0) return 0;
  const std::int64_t fitting = workspace_bytes / (2 * cols) / kDequantSliceRowMultiple * kDequantSliceRowMultiple;
  return std::min(rows, std::max(fitting, kDequantSliceRowMultiple));
}

}  // namespace fp4gemm
