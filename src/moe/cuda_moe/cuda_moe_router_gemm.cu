// The router logits as one FP64 GEMM (cuda_moe_router_gemm.hpp).
#include <cuda_bf16.h>

#include "backends/cuda_common/cuda_check.hpp"
#include "moe/cuda_moe/cuda_moe_router_gemm.hpp"
#include "moe/cuda_moe/cuda_moe_shape.hpp"

namespace fp4gemm::moe::cuda_moe {
namespace {

constexpr int kThreads = kElementwiseThreads;

unsigned blocks_for(std::int64_t elements) { return unsigned((elements + kThreads - 1) / kThreads); }

// out[r, c] = double(rows[r, c]) for `rows` x `cols` elements of a BF16 or FP32 matrix (exact).
__global__ void __launch_bounds__(kThreads) widen_kernel(const void* __restrict__ in, bool bf16, std::int64_t stride, std::int64_t rows,
                                                         std::int64_t cols, double* __restrict__ out) {
  const std::int64_t i = std::int64_t(blockIdx.x) * kThreads + threadIdx.x;
  if (i >= rows * cols) return;
  const std::int64_t r = i / cols, c = i % cols;
  out[i] = bf16 ? double(__bfloat162float(static_cast<const __nv_bfloat16*>(in)[r * stride + c]))
                : double(static_cast<const float*>(in)[r * stride + c]);
}

// logits[t, e] = float(sums[e + t·E]): cuBLAS's column-major E x T result is the row-major T x E.
__global__ void __launch_bounds__(kThreads) narrow_kernel(const double* __restrict__ sums, std::int64_t count, float* __restrict__ logits) {
  const std::int64_t i = std::int64_t(blockIdx.x) * kThreads + threadIdx.x;
  if (i < count) logits[i] = float(sums[i]);
}

}  // namespace

RouterGemmHandle::RouterGemmHandle() { cuda::check_cublas(cublasCreate(&handle_), "cuda_moe: creating the router's cuBLAS handle"); }
RouterGemmHandle::~RouterGemmHandle() {
  if (handle_ != nullptr) cublasDestroy(handle_);
}

void launch_router_gemm(RouterGemmHandle& gemm, const DeviceRows& x, std::int64_t tokens, std::int64_t hidden, const float* router,
                        std::int64_t experts, double* scratch, float* logits, cudaStream_t stream) {
  if (tokens == 0) return;
  double* x64 = scratch;
  double* router64 = x64 + tokens * hidden;
  double* sums = router64 + experts * hidden;
  widen_kernel<<<blocks_for(tokens * hidden), kThreads, 0, stream>>>(x.data, x.bf16, x.stride, tokens, hidden, x64);
  cuda::check_launch("cuda_moe: launching the widening of x for the router GEMM");
  widen_kernel<<<blocks_for(experts * hidden), kThreads, 0, stream>>>(router, false, hidden, experts, hidden, router64);
  cuda::check_launch("cuda_moe: launching the widening of the router");
  {
    std::lock_guard lock(gemm.mutex());
    cuda::check_cublas(cublasSetStream(gemm.get(), stream), "cuda_moe: binding the caller's stream to the router's cuBLAS handle");
    // Column-major: sums (E x T, ld E) = router64ᵀ (E x H) · x64 (H x T).
    const double one = 1.0, zero = 0.0;
    cuda::check_cublas(cublasDgemm(gemm.get(), CUBLAS_OP_T, CUBLAS_OP_N, int(experts), int(tokens), int(hidden), &one, router64, int(hidden),
                                   x64, int(hidden), &zero, sums, int(experts)),
                       "cuda_moe: the router GEMM (cublasDgemm)");
  }
  narrow_kernel<<<blocks_for(tokens * experts), kThreads, 0, stream>>>(sums, tokens * experts, logits);
  cuda::check_launch("cuda_moe: launching the rounding of the router logits");
}

}  // namespace fp4gemm::moe::cuda_moe
