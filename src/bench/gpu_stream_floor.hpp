#pragma once
// The bench's stream floor: the time per call of a kernel that only reads a weight's NVFP4 bytes,
// timed in the same harness as the backends (CUDA-graph replays of back-to-back calls, weights
// rotated past L2) and chained with programmatic dependent launch where the GPU has it (SM 9.0+).
// No GEMM on this GPU can read those bytes faster in this harness, so our time over it says how
// much of a gap to the roofline is the harness's (launch, ramp, tail) and how much the kernel's.
#include <cuda_runtime_api.h>

#include "bench/bench.hpp"

namespace fp4gemm::bench {

// A row named "stream_floor" (peer = true) for `problem`'s weight (it depends on N and K only).
Result time_stream_floor(const GemmProblem& problem, const DeviceInfo& device, cudaStream_t stream);

}  // namespace fp4gemm::bench
