#pragma once
// Launcher of the activation-resident wgmma kernel for 16 < M <= 64 on SM 9.0 (defined in
// sm90_resident_gemm.cu; design: docs/design/activation-stationary-wgmma.md).
#include <cuda_runtime.h>

#include <cstdint>

#include "backends/cuda_decode/resident_layout.hpp"
#include "backends/cuda_decode/sm90_wgmma_gemm.cuh"

namespace fp4gemm::cuda_decode {

// Launches on `stream` (an SM 9.0 GPU only) a persistent grid of as many clusters of
// `shape.splits` CTAs as fit the GPU at once (at most one per 128-row block), with programmatic
// dependent launch when `programmatic`. Returns the launch status; cudaErrorInvalidConfiguration
// when the shape is not compiled or its K slice does not fit shared memory.
cudaError_t launch_resident_gemm(const WgmmaGemmArgs& args, const ResidentShape& shape, bool programmatic, cudaStream_t stream);

// Clusters of the shape that fit the current GPU at once for a K of `chunks` chunks (0: none, or
// the slice does not fit shared memory): the persistent grid's size when N has as many row blocks.
int resident_active_clusters(const ResidentShape& shape, int chunks);

// Whether the shape runs: tokens compiled in, splits a power of two up to kMaxResidentSplits.
bool is_compiled_resident_shape(const ResidentShape& shape);

}  // namespace fp4gemm::cuda_decode
