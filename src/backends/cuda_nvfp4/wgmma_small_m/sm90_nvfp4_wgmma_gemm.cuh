#pragma once
// Launcher of the NVFP4 wgmma kernel for 16 < M <= 64 on SM 9.0 (defined in sm90_nvfp4_wgmma_gemm.cu).
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "backends/cuda_nvfp4/wgmma_small_m/sm90_nvfp4_wgmma_tuning.hpp"
#include "backends/cuda_nvfp4/kernel_problem.hpp"
#include "backends/cuda_nvfp4/wgmma_small_m/sm90_nvfp4_wgmma_stream_k.hpp"

namespace fp4gemm::cuda_nvfp4 {

struct WgmmaGemmArgs : KernelProblem {
  const void* packed_activations = nullptr;  // activation_pack_layout.hpp, shape.tokens wide
  // The stream-K grid (sm90_nvfp4_wgmma_stream_k.hpp) where stream.ctas > 0, else the data-parallel one.
  StreamKPartition stream;
  unsigned* stream_flags = nullptr;   // one per CTA, zero at launch
  void* stream_partials = nullptr;    // one slot of (CTA rows x shape.tokens) floats per CTA
};

// Bytes of one stream-K workspace slot: a CTA's FP32 sums, 64 rows per warpgroup x shape.tokens.
constexpr std::size_t stream_k_slot_bytes(const WgmmaShape& shape) {
  return std::size_t(64) * shape.warpgroups * shape.tokens * sizeof(float);
}

// Launches on `stream` (an SM 9.0 GPU only, `multiprocessors` SMs), with programmatic dependent
// launch when `programmatic` (programmatic_launch.cuh), one CTA per SM where
// wgmma_one_cta_per_sm says; returns the launch status.
cudaError_t launch_wgmma_gemm(const WgmmaGemmArgs& args, const WgmmaShape& shape, bool programmatic, int multiprocessors,
                              cudaStream_t stream);

// CTAs of the stream-K kernel for `tokens` (16, 32 or 64) that one SM of the current device holds
// at the grid's dynamic shared memory (0 for another width or on error): what
// stream_k_ctas_per_sm promises, for tests.
int wgmma_stream_k_resident_ctas_per_sm(int tokens);

// Whether the shape runs: (tokens, warpgroups) compiled in, multicast and splits powers of two, the cluster
// (multicast x splits) at most kMaxWgmmaCluster CTAs.
bool is_compiled_wgmma_shape(const WgmmaShape& shape);

}  // namespace fp4gemm::cuda_nvfp4
