#pragma once
// Launcher of the decoder-warp wgmma kernel for 16 < M <= 64 on SM 9.0 (defined in
// sm90_decoder_gemm.cu; design: docs/design/decoder-warps-wgmma.md).
#include <cuda_runtime.h>

#include "backends/cuda_decode/decode_tuning.hpp"
#include "backends/cuda_decode/sm90_wgmma_gemm.cuh"

namespace fp4gemm::cuda_decode {

// Launches on `stream` (an SM 9.0 GPU only) one CTA per 128-row block and K split, clusters of
// `shape.splits` CTAs along K, with programmatic dependent launch when `programmatic`. Returns the
// launch status; cudaErrorInvalidConfiguration for a shape this build does not compile.
cudaError_t launch_decoder_gemm(const WgmmaGemmArgs& args, const DecoderShape& shape, bool programmatic, cudaStream_t stream);

// Whether the shape runs: 32 or 64 tokens, splits a power of two up to kMaxWgmmaCluster.
bool is_compiled_decoder_shape(const DecoderShape& shape);

}  // namespace fp4gemm::cuda_decode
