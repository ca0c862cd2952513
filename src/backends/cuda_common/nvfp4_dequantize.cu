// The NVFP4 -> BF16 dequantization kernel, shared by `cuda_dequant_cublas` (weights once at
// prepare, NVFP4 activations per call) and `cuda_nvfp4` (NVFP4 activations per call).
// Memory-bound and simple by design.
#include <cuda_bf16.h>

#include "backends/cuda_common/cuda_check.hpp"
#include "backends/cuda_common/nvfp4_decode.cuh"
#include "backends/cuda_common/nvfp4_dequantize.hpp"

namespace fp4gemm::cuda {
namespace {

constexpr int kThreadsPerBlock = 256;
constexpr std::int64_t kElementsPerScale = 16;

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

unsigned blocks_for(std::int64_t threads) { return unsigned((threads + kThreadsPerBlock - 1) / kThreadsPerBlock); }

}  // namespace

void launch_dequantize_to_bf16(const DeviceNvfp4& matrix, std::uint16_t* out, cudaStream_t stream) {
  const std::int64_t scale_cols = matrix.cols / kElementsPerScale;
  const std::int64_t blocks = matrix.rows * scale_cols;
  if (blocks == 0) return;
  const bool swizzled = matrix.swizzled_scales;
  const bool aligned = reinterpret_cast<std::uintptr_t>(matrix.codes) % alignof(uint2) == 0;
  auto* vectors = reinterpret_cast<uint4*>(out);
  if (aligned) {
    dequantize_to_bf16_kernel<true><<<blocks_for(blocks), kThreadsPerBlock, 0, stream>>>(
        matrix.codes, matrix.scales, swizzled, matrix.rows, scale_cols, vectors);
  } else {
    dequantize_to_bf16_kernel<false><<<blocks_for(blocks), kThreadsPerBlock, 0, stream>>>(
        matrix.codes, matrix.scales, swizzled, matrix.rows, scale_cols, vectors);
  }
  cuda::check_launch("launching the NVFP4 -> BF16 dequantization kernel");
}

}  // namespace fp4gemm::cuda
