#pragma once
// Programmatic dependent launch (PDL, SM 9.0 and newer) for the cuda_decode kernels.
//
// A kernel launched with cudaLaunchAttributeProgrammaticStreamSerialization may be scheduled while
// the kernel before it on the stream is still finishing. Ours use that window for the one input
// nothing on the stream writes: the prepared weight (uploaded once by prepare()). Activations are
// read, and outputs written, only after wait_for_prior_grids(), which returns once the kernels
// before have completed and their writes are visible. The hope was that a call's weight stream
// would overlap the previous call's tail and the launch gap: at M = 1 a call costs about 3 us more
// than its bytes (4096 x 4096: 5.5 us against a 2.2 us roofline). Measured on the H200 it did not
// (use_programmatic_launch in decode_tuning.hpp has the figures), so it is off unless FP4GEMM_PDL=1.
//
// Without the attribute, or before SM 9.0, both calls below are no-ops and the launch is ordinary.
#include <cuda_runtime.h>

namespace fp4gemm::cuda_decode {

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

}  // namespace fp4gemm::cuda_decode
