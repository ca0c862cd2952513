#pragma once
// Launcher of the NVFP4 prefill kernel for M > 64 on SM 9.0 (defined in sm90_nvfp4_prefill_gemm.cu).
#include <cuda_runtime.h>

#include <cstdint>

#include "backends/cuda_nvfp4/wgmma_prefill/sm90_nvfp4_prefill_tuning.hpp"
#include "backends/cuda_nvfp4/kernel_problem.hpp"

namespace fp4gemm::cuda_nvfp4 {

struct PrefillGemmArgs : KernelProblem {
  const void* packed_activations = nullptr;  // sm90_nvfp4_prefill_pack.hpp
  // K split (prefill_k_splits): with k_splits > 1, a counter per output tile, zero at launch, and
  // prefill_partial_bytes of workspace for the partial tiles.
  int k_splits = 1;
  unsigned* tile_counters = nullptr;
  void* partials = nullptr;
};

// Workspace of the partial tiles: FP32 sums of every tile's every split (none unsplit).
constexpr std::int64_t prefill_partial_bytes(std::int64_t m, std::int64_t n, int k_splits) {
  return k_splits > 1 ? prefill_tiles(m, n) * k_splits * kPrefillCtaTokens * kPrefillCtaRows * std::int64_t(sizeof(float)) : 0;
}

// Launches on `stream` (an SM 9.0 GPU only), with programmatic dependent launch when
// `programmatic` (programmatic_launch.cuh); returns the launch status (cudaErrorInvalidValue for a
// split without its workspace, or more splits than chunks).
cudaError_t launch_prefill_gemm(const PrefillGemmArgs& args, bool programmatic, cudaStream_t stream);

}  // namespace fp4gemm::cuda_nvfp4
