#pragma once
// GPU kernels of `cuda_dequant_cublas` (launchers; the kernels live in dequant_kernels.cu).
// BF16 values travel as their 16-bit patterns (std::uint16_t) so host files need no CUDA headers.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "fp4gemm/types.hpp"

namespace fp4gemm::dequant_cublas {

// Splits FP32 values into three BF16 terms, hi + mid + lo == x exactly for normal-range finite x
// (8 + 8 + 8 significant bits cover FP32's 24). out is [3 * rows, cols]: hi rows, then mid, then lo.
void launch_split_f32_to_bf16x3(const float* values, std::int64_t row_stride, std::int64_t rows, std::int64_t cols,
                                std::uint16_t* out, cudaStream_t stream);


// out[r, c] = alpha * sum_p partials[p * rows + r, c] (p < parts, partials [parts * rows, cols]
// contiguous FP32), rounded once to `out_dtype`; out has `out_stride` elements per row.
void launch_combine_partials(const float* partials, int parts, std::int64_t rows, std::int64_t cols, float alpha,
                             void* out, DType out_dtype, std::int64_t out_stride, cudaStream_t stream);

}  // namespace fp4gemm::dequant_cublas
