#pragma once
// Launcher of the NVFP4 wgmma kernel for 16 < M <= 64 on SM 9.0 (defined in sm90_wgmma_gemm.cu).
#include <cuda_runtime.h>

#include <cstdint>

#include "backends/cuda_decode/decode_tuning.hpp"
#include "fp4gemm/types.hpp"

namespace fp4gemm::cuda_decode {

struct WgmmaGemmArgs {
  const void* records = nullptr;  // decode layout (decode_layout.hpp), device memory
  const void* packed_activations = nullptr;  // activation_pack.hpp, shape.tokens wide
  void* out = nullptr;           // [m, out_stride]
  std::int64_t out_stride = 0;
  DType out_dtype = DType::bf16;
  int m = 0, n = 0, k = 0;
  int chunks = 0;  // K / 64, rounded up
  float alpha = 1.0f;
};

// Launches on `stream` (an SM 9.0 GPU only); returns the launch status.
cudaError_t launch_wgmma_gemm(const WgmmaGemmArgs& args, const WgmmaShape& shape, cudaStream_t stream);

// Whether the shape runs: (tokens, warpgroups) compiled in, multicast a power of two, the cluster
// (multicast x splits) at most kMaxWgmmaCluster CTAs.
bool is_compiled_wgmma_shape(const WgmmaShape& shape);

}  // namespace fp4gemm::cuda_decode
