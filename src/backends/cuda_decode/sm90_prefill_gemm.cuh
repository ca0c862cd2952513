#pragma once
// Launcher of the NVFP4 prefill kernel for M > 64 on SM 9.0 (defined in sm90_prefill_gemm.cu).
#include <cuda_runtime.h>

#include <cstdint>

#include "backends/cuda_decode/decode_tuning.hpp"
#include "backends/cuda_decode/kernel_problem.hpp"

namespace fp4gemm::cuda_decode {

struct PrefillGemmArgs : KernelProblem {
  const void* packed_activations = nullptr;  // prefill_activation_pack.hpp
};

// Launches on `stream` (an SM 9.0 GPU only), with programmatic dependent launch when
// `programmatic` (programmatic_launch.cuh); returns the launch status.
cudaError_t launch_prefill_gemm(const PrefillGemmArgs& args, bool programmatic, cudaStream_t stream);

}  // namespace fp4gemm::cuda_decode
