#pragma once
// Status checks for the CUDA runtime, cuBLAS and cuBLASLt that turn a failure into fp4gemm::Error
// with a sentence naming what was being done. Shared by every CUDA backend and the GPU benchmark.
//
// NOTE: errors that leave the CUDA context unusable (illegal address, launch failure, device-side
// assert, ...) are "sticky": every later call in the process fails too. They are thrown as
// ErrorCode::unrecoverable so a caller can tell "try another backend" from "restart the process".
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <string>

#include "fp4gemm/error.hpp"

namespace fp4gemm::cuda {

// True for the runtime errors after which the context is broken for the rest of the process.
bool is_sticky(cudaError_t status);

// Throws Error when `status` is not cudaSuccess: "<what> failed: <description> (<name>)."
// `what` is a phrase such as "cuda_dequant_cublas: uploading the weight codes".
void check_cuda(cudaError_t status, const std::string& what);

// After a kernel launch: reports a bad launch configuration (cudaGetLastError, which also clears
// a non-sticky error so it cannot be blamed on a later call).
void check_launch(const std::string& what);

// Throws Error when a cuBLAS/cuBLASLt status is not CUBLAS_STATUS_SUCCESS. NOT_SUPPORTED becomes
// ErrorCode::unsupported (a valid request the library cannot serve), the rest backend_failure.
void check_cublas(cublasStatus_t status, const std::string& what);

// Throws invalid_argument unless `pointer` is memory the GPU `device` can read: device memory of
// that GPU, managed memory, or pinned host memory. Plain (pageable) host memory passed in a view
// marked Memory::cuda would otherwise crash a kernel with a sticky illegal-address error.
void check_device_pointer(const void* pointer, int device, const std::string& what);

// Makes `device` current for a scope and restores the previous device afterwards.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = 0;
  bool restore_ = false;
};

}  // namespace fp4gemm::cuda
