#pragma once
// The NVFP4 -> BF16 dequantization kernel (launcher; the kernel lives in nvfp4_dequantize.cu),
// shared by the CUDA backends. BF16 values travel as their 16-bit patterns (std::uint16_t) so host
// files need no CUDA headers.
#include <cuda_runtime_api.h>

#include <cstdint>

namespace fp4gemm::cuda {

// An NVFP4 matrix already in device memory: codes [rows, cols/2], E4M3 scales linear or 128x4.
struct DeviceNvfp4 {
  const std::uint8_t* codes = nullptr;
  const std::uint8_t* scales = nullptr;
  bool swizzled_scales = false;  // false: linear [rows, cols/16]; true: 128x4 tiles
  std::int64_t rows = 0;
  std::int64_t cols = 0;
};

// out[r, c] = e2m1(code) * e4m3(block scale), as BF16, [rows, cols] contiguous. Exact: every such
// product has at most 6 significant bits and lies in [2^-10, 2688]. The global scale is not applied.
// `out` must be 16-byte aligned (a cudaMalloc/cudaMallocAsync allocation is).
void launch_dequantize_to_bf16(const DeviceNvfp4& matrix, std::uint16_t* out, cudaStream_t stream);

}  // namespace fp4gemm::cuda
