#pragma once
// Launcher of the wide prefill kernel (sm90_nvfp4_wide_gemm.cu): NVFP4 weights decoded in registers
// as wgmma's A, 128 or 256 activation rows (packed, sm90_nvfp4_wgmma_pack.hpp) as its B.
#include <cuda_runtime.h>

#include "backends/cuda_nvfp4/kernel_problem.hpp"
#include "backends/cuda_nvfp4/wgmma_wide/sm90_nvfp4_wide_tuning.hpp"

namespace fp4gemm::cuda_nvfp4 {

struct WideGemmArgs : KernelProblem {
  int tokens = 256;  // the CTA width in activation rows: 128 or 256
  // launch_pack_activations with `tokens`: ceil(m / tokens) blocks of chunks.
  const void* packed_activations = nullptr;
  int ctas = 0;  // the persistent grid (wide_grid_ctas), 1 to the tiles
};

// Launches on `stream` (an SM 9.0 GPU only), with programmatic dependent launch when
// `programmatic`; returns the launch status.
cudaError_t launch_wide_gemm(const WideGemmArgs& args, bool programmatic, cudaStream_t stream);

}  // namespace fp4gemm::cuda_nvfp4
