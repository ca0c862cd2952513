// Elementwise kernels of `cuda_dequant_cublas`: the exact FP32 -> 3 x BF16 split and the epilogue
// that sums split partials and rounds to the output type (the NVFP4 -> BF16 dequantization is
// cuda_common/nvfp4_dequantize.cu). All memory-bound and simple by design; the GEMM itself is cuBLAS.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "backends/cuda_common/cuda_check.hpp"
#include "backends/cuda_dequant_cublas/dequant_kernels.hpp"

namespace fp4gemm::dequant_cublas {
namespace {

constexpr int kThreadsPerBlock = 256;

__global__ void split_f32_to_bf16x3_kernel(const float* __restrict__ values, std::int64_t row_stride, std::int64_t rows,
                                           std::int64_t cols, __nv_bfloat16* __restrict__ out) {
  const std::int64_t index = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (index >= rows * cols) return;
  const std::int64_t row = index / cols, col = index % cols;
  const float value = values[row * row_stride + col];
  const __nv_bfloat16 high = __float2bfloat16_rn(value);
  // Each remainder is exact in FP32 (the rounding error of a round-to-nearest is representable).
  // Non-finite input keeps its Inf/NaN in the high term alone, so it propagates unchanged.
  const float first_remainder = isfinite(value) ? value - __bfloat162float(high) : 0.0f;
  const __nv_bfloat16 middle = __float2bfloat16_rn(first_remainder);
  const __nv_bfloat16 low = __float2bfloat16_rn(first_remainder - __bfloat162float(middle));
  const std::int64_t plane = rows * cols;
  out[index] = high;
  out[plane + index] = middle;
  out[2 * plane + index] = low;
}

template <class Output>
__device__ __forceinline__ Output convert(float value);
template <>
__device__ __forceinline__ float convert<float>(float value) { return value; }
template <>
__device__ __forceinline__ __nv_bfloat16 convert<__nv_bfloat16>(float value) { return __float2bfloat16_rn(value); }
template <>
__device__ __forceinline__ __half convert<__half>(float value) { return __float2half_rn(value); }

template <class Output>
__global__ void combine_partials_kernel(const float* __restrict__ partials, int parts, std::int64_t rows,
                                        std::int64_t cols, float alpha, Output* __restrict__ out,
                                        std::int64_t out_stride) {
  const std::int64_t index = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (index >= rows * cols) return;
  const std::int64_t row = index / cols, col = index % cols;
  // Smallest terms first (the split puts them last), so they are not lost against the largest.
  float sum = 0.0f;
  for (int part = parts - 1; part >= 0; --part) sum += partials[part * rows * cols + index];
  out[row * out_stride + col] = convert<Output>(alpha * sum);
}

unsigned grid_for(std::int64_t threads) { return unsigned((threads + kThreadsPerBlock - 1) / kThreadsPerBlock); }

}  // namespace


void launch_split_f32_to_bf16x3(const float* values, std::int64_t row_stride, std::int64_t rows, std::int64_t cols,
                                std::uint16_t* out, cudaStream_t stream) {
  if (rows * cols == 0) return;
  split_f32_to_bf16x3_kernel<<<grid_for(rows * cols), kThreadsPerBlock, 0, stream>>>(
      values, row_stride, rows, cols, reinterpret_cast<__nv_bfloat16*>(out));
  cuda::check_launch("cuda_dequant_cublas: launching the FP32 -> 3 x BF16 split kernel");
}

void launch_combine_partials(const float* partials, int parts, std::int64_t rows, std::int64_t cols, float alpha,
                             void* out, DType out_dtype, std::int64_t out_stride, cudaStream_t stream) {
  if (rows * cols == 0) return;
  const unsigned grid = grid_for(rows * cols);
  switch (out_dtype) {
    case DType::f32:
      combine_partials_kernel<<<grid, kThreadsPerBlock, 0, stream>>>(partials, parts, rows, cols, alpha,
                                                                     static_cast<float*>(out), out_stride);
      break;
    case DType::bf16:
      combine_partials_kernel<<<grid, kThreadsPerBlock, 0, stream>>>(partials, parts, rows, cols, alpha,
                                                                     static_cast<__nv_bfloat16*>(out), out_stride);
      break;
    case DType::f16:
      combine_partials_kernel<<<grid, kThreadsPerBlock, 0, stream>>>(partials, parts, rows, cols, alpha,
                                                                     static_cast<__half*>(out), out_stride);
      break;
  }
  cuda::check_launch("cuda_dequant_cublas: launching the output epilogue kernel");
}

}  // namespace fp4gemm::dequant_cublas
