#pragma once
// Converting linear [rows, cols/16] E4M3 scales to the 128x4 swizzled layout on the GPU, for
// activations quantized by a kernel that writes linear scales (weights are converted on the host
// once, in prepare()). Same layout as fp4gemm::scale_layout::to_swizzled, padding zeroed.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>

#include "fp4gemm/device.hpp"

namespace fp4gemm::cublaslt {

// Empty when this binary holds code the device can run for the swizzle kernel, else why not.
// A real GPU (DeviceInfo::probed) is asked through the runtime; a simulated one is compared with
// the architectures nvcc compiled this file for (__CUDA_ARCH_LIST__).
std::string missing_kernel_code_reason(const DeviceInfo& device);

// `swizzled` holds scale_layout::swizzled_bytes(rows, cols) bytes. Asynchronous on `stream`.
cudaError_t swizzle_scales_on_device(const std::uint8_t* linear, std::uint8_t* swizzled, std::int64_t rows,
                                     std::int64_t cols, cudaStream_t stream);

}  // namespace fp4gemm::cublaslt
