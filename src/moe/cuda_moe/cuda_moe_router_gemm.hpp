#pragma once
// The router logits of many tokens as one FP64 GEMM on cuBLAS (cuda_moe_router_gemm.cu): x and the
// FP32 router widened to FP64 (exact), cublasDgemm, each sum rounded once to FP32. The same values
// as the router logits kernel's FP64 sums (which differ from the oracle's index-order sum by a few
// FP64 ulps before that rounding); that kernel re-reads x once per block of two experts, ~4.7 ms at
// T = 4096 on an H100.
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <mutex>

#include "moe/cuda_moe/cuda_moe_kernels.hpp"

namespace fp4gemm::moe::cuda_moe {

// A layer's cuBLAS handle, made when the layer is prepared (on its device, outside any graph
// capture); `mutex` keeps a call's stream binding and GEMM together when calls run concurrently.
class RouterGemmHandle {
 public:
  RouterGemmHandle();  // on the current device
  ~RouterGemmHandle();
  RouterGemmHandle(const RouterGemmHandle&) = delete;
  RouterGemmHandle& operator=(const RouterGemmHandle&) = delete;
  cublasHandle_t get() const { return handle_; }
  std::mutex& mutex() { return mutex_; }

 private:
  cublasHandle_t handle_ = nullptr;
  std::mutex mutex_;
};

// logits [T, E] (FP32, row-major) = x·routerᵀ, router FP32 [E, H]; `scratch` holds
// router_gemm_scratch_doubles (cuda_moe_shape.hpp). Enqueued on `stream`.
void launch_router_gemm(RouterGemmHandle& gemm, const DeviceRows& x, std::int64_t tokens, std::int64_t hidden, const float* router,
                        std::int64_t experts, double* scratch, float* logits, cudaStream_t stream);

}  // namespace fp4gemm::moe::cuda_moe
