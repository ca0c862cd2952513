// Every CUDA backend, one line each. Order is display order only; the `auto` preference lives with
// the runner. Constructing a backend must not touch the GPU (the list is built on GPU-less machines).
#include "backends/cuda_backends.hpp"

#include "backends/cublaslt/cublaslt_backend.hpp"
#include "backends/cuda_nvfp4/cuda_nvfp4_backend.hpp"
#include "backends/cuda_dequant_cublas/dequant_cublas_backend.hpp"

namespace fp4gemm {

std::vector<std::unique_ptr<Backend>> make_cuda_backends() {
  std::vector<std::unique_ptr<Backend>> backends;
  backends.push_back(std::make_unique<CudaNvfp4Backend>());
  backends.push_back(std::make_unique<CudaDequantCublasBackend>());
  backends.push_back(std::make_unique<CudaDequantCublasBackend>(Bf16Weight::persistent_copy));
  backends.push_back(std::make_unique<CublasLtBackend>());
  return backends;
}

}  // namespace fp4gemm
