#pragma once
// Programmatic dependent launch (PDL, SM 9.0 and newer) for the cuda_nvfp4 kernels and the bench's
// stream floor (bench/gpu_stream_floor.hpp).
//
// A kernel launched with cudaLaunchAttributeProgrammaticStreamSerialization may be scheduled while
// the kernel before it on the stream is still finishing. cuda_nvfp4's kernels use that window for
// the one input nothing on the stream writes: the prepared weight (uploaded once by prepare()). Activations are
// read, and outputs written, only after wait_for_prior_grids(), which returns once the kernels
// before have completed and their writes are visible. When it is used (the policy and its H200
// figures: programmatic_launch_policy in sm80_nvfp4_mma_tuning.hpp), a call's weight stream starts under
// the previous call's tail and the launch gap: at M = 1 a call costs ~3 us more than its bytes.
// Without the attribute, or before SM 9.0, both calls below are no-ops and the launch is ordinary.
#include <cuda_runtime.h>

namespace fp4gemm {

// Blocks the calling thread until the grids this one depends on have completed (writes visible).
__device__ __forceinline__ void wait_for_prior_grids() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  cudaGridDependencySynchronize();
#endif
}

// Lets the next PDL kernel on the stream be scheduled once every CTA of this grid has called this
// (or exited). It orders nothing: the next kernel still waits for this one before reading outputs.
__device__ __forceinline__ void allow_dependent_launch() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  cudaTriggerProgrammaticLaunchCompletion();
#endif
}

// The launch attribute that asks for PDL (`enabled` false: an attribute that changes nothing).
inline cudaLaunchAttribute programmatic_launch_attribute(bool enabled) {
  cudaLaunchAttribute attribute = {};
  attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute.val.programmaticStreamSerializationAllowed = enabled ? 1 : 0;
  return attribute;
}

}  // namespace fp4gemm
