#pragma once
// The vendor peers our GPU backends are judged against, timed exactly like them (CUDA-graph
// replays, weights rotated past L2, random data). A peer that cannot run a shape returns a row
// with ok = false and the reason; nothing is padded to make it fit.
#include <cuda_runtime_api.h>

#include "bench/bench.hpp"
#include "fp4gemm/format/nvfp4_matrix.hpp"

namespace fp4gemm::bench {

// cuBLAS BF16 x BF16 -> BF16 (cublasGemmEx, FP32 accumulation) on the dequantized weight: what a
// deployment without FP4 kernels runs.
Result time_cublas_bf16(const GemmProblem& problem, const Nvfp4Matrix& weight, cudaStream_t stream);

// cuBLASLt FP8 E4M3 x E4M3 -> BF16, per-tensor scales, FP32 accumulation, "TN" layout: the
// fastest dense alternative on Hopper (twice the bytes of NVFP4 per weight).
Result time_cublaslt_fp8(const GemmProblem& problem, cudaStream_t stream);

}  // namespace fp4gemm::bench
