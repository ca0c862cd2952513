#include "backends/cublaslt/cublaslt_descriptors.hpp"

#include "backends/cuda_common/cuda_check.hpp"

namespace fp4gemm::cublaslt {
namespace {

cudaDataType_t cuda_type_of(DType dtype) {
  switch (dtype) {
    case DType::f32: return CUDA_R_32F;
    case DType::bf16: return CUDA_R_16BF;
    case DType::f16: return CUDA_R_16F;
  }
  return CUDA_R_32F;
}

template <class Value>
void set_attribute(cublasLtMatmulDesc_t operation, cublasLtMatmulDescAttributes_t attribute, const Value& value,
                   const char* what) {
  cuda::check_cublas(cublasLtMatmulDescSetAttribute(operation, attribute, &value, sizeof value),
                     std::string("cublaslt: setting ") + what);
}

}  // namespace

Nvfp4MatmulDescriptors::Nvfp4MatmulDescriptors(std::int64_t m, std::int64_t n, std::int64_t k, DType output_type,
                                               std::int64_t output_stride) {
  try {
    cuda::check_cublas(cublasLtMatmulDescCreate(&operation, CUBLAS_COMPUTE_32F, CUDA_R_32F),
                       "cublaslt: creating the matmul descriptor");
    set_attribute(operation, CUBLASLT_MATMUL_DESC_TRANSA, cublasOperation_t(CUBLAS_OP_T), "TRANSA");
    set_attribute(operation, CUBLASLT_MATMUL_DESC_TRANSB, cublasOperation_t(CUBLAS_OP_N), "TRANSB");
    const std::int32_t block_scaled = CUBLASLT_MATMUL_MATRIX_SCALE_VEC16_UE4M3;
    set_attribute(operation, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, block_scaled, "the weight scale mode (VEC16_UE4M3)");
    set_attribute(operation, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, block_scaled, "the activation scale mode (VEC16_UE4M3)");
    cuda::check_cublas(cublasLtMatrixLayoutCreate(&weight, CUDA_R_4F_E2M1, std::uint64_t(k), std::uint64_t(n), k),
                       "cublaslt: creating the weight layout");
    cuda::check_cublas(cublasLtMatrixLayoutCreate(&activation, CUDA_R_4F_E2M1, std::uint64_t(k), std::uint64_t(m), k),
                       "cublaslt: creating the activation layout");
    cuda::check_cublas(
        cublasLtMatrixLayoutCreate(&output, cuda_type_of(output_type), std::uint64_t(n), std::uint64_t(m), output_stride),
        "cublaslt: creating the output layout");
  } catch (...) {
    this->~Nvfp4MatmulDescriptors();
    throw;
  }
}

Nvfp4MatmulDescriptors::~Nvfp4MatmulDescriptors() {
  if (output) cublasLtMatrixLayoutDestroy(output);
  if (activation) cublasLtMatrixLayoutDestroy(activation);
  if (weight) cublasLtMatrixLayoutDestroy(weight);
  if (operation) cublasLtMatmulDescDestroy(operation);
  output = activation = weight = nullptr;
  operation = nullptr;
}

void Nvfp4MatmulDescriptors::set_scale_pointers(const void* weight_scales, const void* activation_scales) {
  set_attribute(operation, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, weight_scales, "the weight scale pointer");
  set_attribute(operation, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, activation_scales, "the activation scale pointer");
}

std::string status_text(cublasStatus_t status) {
  return std::string(cublasGetStatusName(status)) + " (" + cublasGetStatusString(status) + ")";
}

}  // namespace fp4gemm::cublaslt
