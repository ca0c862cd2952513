#pragma once
// The `cuda_moe` layout of a layer in GPU memory (made by cuda_moe_prepare_cuda.cpp).
#include "backends/cuda_common/device_buffer.hpp"
#include "fp4gemm/moe/moe_backend.hpp"
#include <memory>

#include "moe/cuda_moe/cuda_moe_kernels.hpp"
#include "moe/cuda_moe/cuda_moe_router_gemm.hpp"

namespace fp4gemm::moe {

// Experts stacked: NVFP4 codes [E, rows, cols/2], linear scales [E, rows, cols/16] and global
// scales; or (a dense shared expert) FP32 `dense` [1, rows, cols].
struct CudaExpertStack {
  cuda::DeviceBuffer codes, scales, global_scales, dense;
  std::int64_t rows = 0, cols = 0;
  cuda_moe::StackedExperts view() const {
    return {codes.as<const std::uint8_t>(), scales.as<const std::uint8_t>(), global_scales.as<const float>(),
            dense.as<const float>(), rows, cols};
  }
  std::int64_t bytes() const { return std::int64_t(codes.bytes() + scales.bytes() + global_scales.bytes() + dense.bytes()); }
};

struct CudaPreparedMoe final : PreparedMoe {
  int device = 0;
  int sm = 0;  // major·10 + minor of that GPU: programmatic launches need SM 9.0
  int multiprocessors = 0;  // its SMs: the tensor-core kernel's K split (mma_warps_k)
  CudaExpertStack gate_up;  // rows 2I: gate rows then up rows; global scales gate, up per expert
  CudaExpertStack down;     // rows H; one global scale per expert
  cuda::DeviceBuffer router;  // FP32 [E, H]; empty without a router
  std::unique_ptr<cuda_moe::RouterGemmHandle> router_gemm;  // the router GEMM's cuBLAS handle; null without a router
  CudaExpertStack shared_gate_up, shared_down;  // one "expert" (NVFP4 or dense); empty without a shared expert
  cuda::DeviceBuffer shared_gate;               // FP32 [H]; empty without a sigmoid gate
};

}  // namespace fp4gemm::moe
