#pragma once
// Converting linear [rows, cols/16] E4M3 scales to the 128x4 swizzled layout on the GPU, for
// activations quantized by a kernel that writes linear scales (weights are converted on the host
// once, in prepare()). Same layout as fp4gemm::scale_layout::to_swizzled, padding zeroed.
#include <cuda_runtime_api.h>

#include <cstdint>

namespace fp4gemm::cublaslt {

// `swizzled` holds scale_layout::swizzled_bytes(rows, cols) bytes. Asynchronous on `stream`.
cudaError_t swizzle_scales_on_device(const std::uint8_t* linear, std::uint8_t* swizzled, std::int64_t rows,
                                     std::int64_t cols, cudaStream_t stream);

}  // namespace fp4gemm::cublaslt
