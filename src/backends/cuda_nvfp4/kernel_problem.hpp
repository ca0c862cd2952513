#pragma once
// The arguments both `cuda_nvfp4` kernels take (each adds where its activations are).
#include <cstdint>

#include "fp4gemm/types.hpp"

namespace fp4gemm::cuda_nvfp4 {

struct KernelProblem {
  const void* records = nullptr;  // decode layout (weight_layout.hpp), device memory
  void* out = nullptr;            // [m, out_stride]
  std::int64_t out_stride = 0;
  DType out_dtype = DType::bf16;
  int m = 0, n = 0, k = 0;
  int chunks = 0;  // K / 64, rounded up
  float alpha = 1.0f;
};

}  // namespace fp4gemm::cuda_nvfp4
