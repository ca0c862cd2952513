// Elementwise kernels of `cuda_dequant_cublas`: NVFP4 -> BF16 dequantization (weights once at
// prepare, NVFP4 activations per call), the exact FP32 -> 3 x BF16 split, and the epilogue that
// sums split partials and rounds to the output type. All memory-bound and simple by design; the
// GEMM itself is cuBLAS.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "backends/cuda_common/cuda_check.hpp"
#include "backends/cuda_dequant_cublas/dequant_kernels.hpp"

namespace fp4gemm::dequant_cublas {
namespace {

constexpr int kThreadsPerBlock = 256;
constexpr std::int64_t kElementsPerScale = 16;

// Twice the magnitude of each E2M1 code 0..7 (0, 0.5, 1, 1.5, 2, 3, 4, 6), one nibble each, so a
// shift replaces a table lookup (a per-thread table indexed at run time would go to local memory).
constexpr unsigned kTwiceE2m1Magnitudes = 0xC8643210u;

__device__ __forceinline__ float e2m1_value(unsigned code) {
  const float magnitude = float((kTwiceE2m1Magnitudes >> (4 * (code & 7u))) & 0xFu) * 0.5f;
  return (code & 8u) ? -magnitude : magnitude;
}

// E4M3 "fn": bias 7, subnormals m * 2^-9, 0x7F/0xFF NaN (propagates, as on the host reference).
__device__ __forceinline__ float e4m3_value(unsigned code) {
  const unsigned exponent = (code >> 3) & 0xFu, mantissa = code & 7u;
  float magnitude;
  if (exponent == 0xFu && mantissa == 7u) {
    magnitude = __int_as_float(0x7FC00000);
  } else if (exponent == 0) {
    magnitude = float(mantissa) * 0.001953125f;  // 2^-9
  } else {
    magnitude = __int_as_float(int(((exponent + 120u) << 23) | (mantissa << 20)));  // 2^(e-7) * 1.m
  }
  return (code & 0x80u) ? -magnitude : magnitude;
}

// Offset of scale (row, block) in the 128x4 swizzled layout (see format/scale_layout.hpp).
__device__ __forceinline__ std::int64_t swizzled_offset(std::int64_t row, std::int64_t block, std::int64_t scale_cols) {
  const std::int64_t column_tiles = (scale_cols + 3) / 4;
  return (row / 128) * (column_tiles * 512) + (block / 4) * 512 + (row % 32) * 16 + ((row % 128) / 32) * 4 + block % 4;
}

// One thread per 16-element block: 8 code bytes in, 16 BF16 values (32 bytes) out.
template <bool kAlignedCodes>
__global__ void dequantize_to_bf16_kernel(const std::uint8_t* __restrict__ codes, const std::uint8_t* __restrict__ scales,
                                          bool swizzled, std::int64_t rows, std::int64_t scale_cols,
                                          uint4* __restrict__ out) {
  const std::int64_t block = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (block >= rows * scale_cols) return;
  const std::int64_t row = block / scale_cols, column = block % scale_cols;
  const float scale = e4m3_value(scales[swizzled ? swizzled_offset(row, column, scale_cols) : block]);

  // Load the block's 8 code bytes (element 2i in the low nibble of byte i).
  std::uint8_t packed[8];
  if constexpr (kAlignedCodes) {
    const uint2 word = reinterpret_cast<const uint2*>(codes)[block];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      packed[i] = std::uint8_t(word.x >> (8 * i));
      packed[4 + i] = std::uint8_t(word.y >> (8 * i));
    }
  } else {
#pragma unroll
    for (int i = 0; i < 8; ++i) packed[i] = codes[block * 8 + i];
  }

  // Decode and store as two 16-byte vectors.
  unsigned words[8];
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const __nv_bfloat16 low = __float2bfloat16_rn(e2m1_value(packed[i] & 0xFu) * scale);
    const __nv_bfloat16 high = __float2bfloat16_rn(e2m1_value(packed[i] >> 4) * scale);
    words[i] = unsigned(__bfloat16_as_ushort(low)) | (unsigned(__bfloat16_as_ushort(high)) << 16);
  }
  out[block * 2] = make_uint4(words[0], words[1], words[2], words[3]);
  out[block * 2 + 1] = make_uint4(words[4], words[5], words[6], words[7]);
}

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

void launch_dequantize_to_bf16(const DeviceNvfp4& matrix, std::uint16_t* out, cudaStream_t stream) {
  const std::int64_t scale_cols = matrix.cols / kElementsPerScale;
  const std::int64_t blocks = matrix.rows * scale_cols;
  if (blocks == 0) return;
  const bool swizzled = matrix.swizzled_scales;
  const bool aligned = reinterpret_cast<std::uintptr_t>(matrix.codes) % alignof(uint2) == 0;
  auto* vectors = reinterpret_cast<uint4*>(out);
  if (aligned) {
    dequantize_to_bf16_kernel<true><<<grid_for(blocks), kThreadsPerBlock, 0, stream>>>(
        matrix.codes, matrix.scales, swizzled, matrix.rows, scale_cols, vectors);
  } else {
    dequantize_to_bf16_kernel<false><<<grid_for(blocks), kThreadsPerBlock, 0, stream>>>(
        matrix.codes, matrix.scales, swizzled, matrix.rows, scale_cols, vectors);
  }
  cuda::check_launch("cuda_dequant_cublas: launching the NVFP4 -> BF16 dequantization kernel");
}

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
