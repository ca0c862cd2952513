#pragma once
// Launcher of the NVFP4 small-M kernel (defined in sm90_decode_gemm.cu).
#include <cuda_runtime.h>

#include <cstdint>

#include "backends/cuda_decode/decode_tuning.hpp"
#include "backends/cuda_decode/kernel_problem.hpp"

namespace fp4gemm::cuda_decode {

struct DecodeGemmArgs : KernelProblem {
  const void* activations = nullptr;   // BF16 [m, activation_stride], device memory, 16-byte aligned
  std::int64_t activation_stride = 0;  // a multiple of 8 elements
};

// Launches on `stream`, with programmatic dependent launch when `programmatic` (SM 9.0+ only,
// programmatic_launch.cuh); returns the launch status (cudaSuccess or the error).
cudaError_t launch_decode_gemm(const DecodeGemmArgs& args, const LaunchShape& shape, bool programmatic, cudaStream_t stream);

// The shapes compiled in (for tests and the tuning bench).
bool is_compiled_shape(const LaunchShape& shape);

}  // namespace fp4gemm::cuda_decode
