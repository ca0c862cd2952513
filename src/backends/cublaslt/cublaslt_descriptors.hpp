#pragma once
// The cuBLASLt descriptors of one NVFP4 matmul shape (operation, three matrix layouts), owned
// together and destroyed together. Shared by the heuristic probe and the run.
#include <cublasLt.h>

#include <cstdint>
#include <string>

#include "fp4gemm/types.hpp"

namespace fp4gemm::cublaslt {

class Nvfp4MatmulDescriptors {
 public:
  // out[M,N] (row stride `output_stride` elements) = alpha * A[M,K] * W[N,K]^T; see cublaslt_backend.hpp.
  Nvfp4MatmulDescriptors(std::int64_t m, std::int64_t n, std::int64_t k, DType output, std::int64_t output_stride);
  ~Nvfp4MatmulDescriptors();
  Nvfp4MatmulDescriptors(const Nvfp4MatmulDescriptors&) = delete;
  Nvfp4MatmulDescriptors& operator=(const Nvfp4MatmulDescriptors&) = delete;

  // Device pointers of the swizzled E4M3 scales of the weight and of the activation.
  void set_scale_pointers(const void* weight_scales, const void* activation_scales);

  cublasLtMatmulDesc_t operation = nullptr;
  cublasLtMatrixLayout_t weight = nullptr;      // cuBLASLt's A: [K, N], ld K, transposed
  cublasLtMatrixLayout_t activation = nullptr;  // cuBLASLt's B: [K, M], ld K
  cublasLtMatrixLayout_t output = nullptr;      // C and D: [N, M], ld = output row stride
};

// "CUBLAS_STATUS_NOT_SUPPORTED (the functionality requested is not supported)".
std::string status_text(cublasStatus_t status);

}  // namespace fp4gemm::cublaslt
