#pragma once
// The bench's stream floor: the time per call of a kernel that only reads a weight's NVFP4 bytes,
// timed in the same harness as the backends (CUDA-graph replays of back-to-back calls, weights
// rotated past L2) and chained with programmatic dependent launch where the GPU has it (SM 9.0+).
// A GEMM that reads the same bytes can hardly be faster in this harness, so its time against the
// floor's says how much of a gap to the roofline is the harness's (launch, ramp, tail) and how
// much the kernel's. H200: 4.73 TB/s of marginal bandwidth plus 0.39 us per call (fit from 28 MB
// weights up; 4096x4096 2.50 us).
#include <cuda_runtime_api.h>

#include "bench/bench.hpp"

namespace fp4gemm::bench {

// A row named "stream_floor" (peer = true; the caller marks it `floor`) for `problem`'s weight (it
// depends on N and K only).
Result time_stream_floor(const GemmProblem& problem, const DeviceInfo& device, cudaStream_t stream);

}  // namespace fp4gemm::bench
