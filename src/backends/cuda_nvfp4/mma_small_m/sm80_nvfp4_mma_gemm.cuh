#pragma once
// Launcher of the NVFP4 small-M kernel (defined in sm80_nvfp4_mma_gemm.cu).
#include <cuda_runtime.h>

#include <cstdint>

#include "backends/cuda_nvfp4/mma_small_m/sm80_nvfp4_mma_tuning.hpp"
#include "backends/cuda_nvfp4/kernel_problem.hpp"

namespace fp4gemm::cuda_nvfp4 {

struct DecodeGemmArgs : KernelProblem {
  const void* activations = nullptr;   // BF16 [m, activation_stride], device memory, 16-byte aligned
  std::int64_t activation_stride = 0;  // a multiple of 8 elements
};

// Launches on `stream`, with programmatic dependent launch as decode_gemm_uses_programmatic_launch
// says (`policy` from programmatic_launch_policy, SM 9.0+ only); `multiprocessors`: the GPU's SMs.
// Returns the launch status (cudaSuccess or the error).
cudaError_t launch_decode_gemm(const DecodeGemmArgs& args, const LaunchShape& shape, ProgrammaticLaunch policy,
                               int multiprocessors, cudaStream_t stream);

// Whether launch_decode_gemm uses PDL for this shape and N: `policy` on, or when_grid_fills and
// the grid fills kProgrammaticMinSlotFraction of the resident CTA slots (the kernel's occupancy
// on the current device, asked once per compiled shape) or is clustered (programmatic_at_any_fill).
// False for a shape not compiled.
bool decode_gemm_uses_programmatic_launch(const LaunchShape& shape, std::int64_t n, ProgrammaticLaunch policy,
                                          int multiprocessors);

// CTAs of the compiled shape one SM of the current device holds at once (registers, shared memory,
// warps); 0 for a shape not compiled or when CUDA cannot say.
int decode_gemm_resident_ctas_per_sm(const LaunchShape& shape);

// The shapes compiled in (for tests and the tuning bench).
bool is_compiled_shape(const LaunchShape& shape);

}  // namespace fp4gemm::cuda_nvfp4
