#pragma once
// How `cuda_moe` launches the kernels of its decode chain (routing, the one-block permutation, the
// tensor-core expert kernels, the combine): as programmatic dependent launches (PDL, SM 9.0+) when
// asked, so that a kernel's blocks are scheduled, and run their constant prologue, while the
// kernel before it finishes. Each of those kernels calls wait_for_prior_grids() before it reads or
// writes anything an earlier launch touches (so the per-call workspace, which the next call may
// get back at the same address, is never written early), and allow_dependent_launch() right after
// it (so no kernel is let in before every earlier kernel's data is complete). CUDA sources only.
#include <cuda_runtime.h>

#include <utility>

#include "backends/cuda_common/cuda_check.hpp"
#include "backends/cuda_common/programmatic_launch.cuh"

namespace fp4gemm::moe::cuda_moe {

template <class... Parameters, class... Arguments>
void launch_kernel(void (*kernel)(Parameters...), dim3 grid, dim3 block, cudaStream_t stream, bool programmatic, const char* what,
                   Arguments&&... arguments) {
  cudaLaunchConfig_t config = {};
  config.gridDim = grid;
  config.blockDim = block;
  config.stream = stream;
  cudaLaunchAttribute attribute = programmatic_launch_attribute(programmatic);
  config.attrs = &attribute;
  config.numAttrs = 1;
  cuda::check_cuda(cudaLaunchKernelEx(&config, kernel, std::forward<Arguments>(arguments)...), what);
}

// The start of every kernel launch_kernel may launch programmatically (see the top).
__device__ __forceinline__ void enter_dependent_kernel() {
  wait_for_prior_grids();
  allow_dependent_launch();
}

}  // namespace fp4gemm::moe::cuda_moe
