#include "backends/cuda_common/cuda_check.hpp"

namespace fp4gemm::cuda {

bool is_sticky(cudaError_t status) {
  switch (status) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorLaunchTimeout:
    case cudaErrorAssert:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorECCUncorrectable:
    case cudaErrorContextIsDestroyed:
    case cudaErrorTensorMemoryLeak:
      return true;
    default:
      return false;
  }
}

void check_cuda(cudaError_t status, const std::string& what) {
  if (status == cudaSuccess) return;
  std::string message = what + " failed: " + cudaGetErrorString(status) + " (" + cudaGetErrorName(status) + ").";
  if (is_sticky(status)) {
    throw Error(ErrorCode::unrecoverable,
                message + " The CUDA context is now unusable for this process: restart it, and report the inputs "
                          "that caused this (compute-sanitizer will name the faulting access).");
  }
  if (status == cudaErrorMemoryAllocation) message += " Free device memory or use smaller operands.";
  throw Error(ErrorCode::backend_failure, message);
}

void check_launch(const std::string& what) { check_cuda(cudaGetLastError(), what); }

void check_cublas(cublasStatus_t status, const std::string& what) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  const std::string message =
      what + " failed: " + cublasGetStatusString(status) + " (" + cublasGetStatusName(status) + ").";
  if (status == CUBLAS_STATUS_NOT_SUPPORTED) {
    throw Error(ErrorCode::unsupported, message + " This library build or GPU cannot serve this configuration.");
  }
  if (status == CUBLAS_STATUS_EXECUTION_FAILED) {
    // A failed cuBLAS kernel usually means a sticky CUDA error underneath; report that one if so.
    const cudaError_t underlying = cudaPeekAtLastError();
    if (is_sticky(underlying)) check_cuda(underlying, what);
  }
  throw Error(ErrorCode::backend_failure, message);
}

void check_device_pointer(const void* pointer, int device, const std::string& what) {
  cudaPointerAttributes attributes{};
  const cudaError_t status = cudaPointerGetAttributes(&attributes, pointer);
  if (status != cudaSuccess) {
    cudaGetLastError();  // an invalid pointer is a non-sticky error: clear it before reporting
    throw_invalid(what + " is not a pointer the CUDA runtime knows (" + cudaGetErrorString(status) +
                  "); pass device memory from cudaMalloc");
  }
  switch (attributes.type) {
    case cudaMemoryTypeDevice:
      if (attributes.device != device) {
        throw_invalid(what + " lives on CUDA device " + std::to_string(attributes.device) + " but the call runs on device " +
                      std::to_string(device) + "; pass memory of the device the weight was prepared on");
      }
      return;
    case cudaMemoryTypeManaged:
    case cudaMemoryTypeHost:
      return;
    case cudaMemoryTypeUnregistered:
    default:
      throw_invalid(what + " is ordinary host memory, but the view says Memory::cuda; copy it to the GPU first "
                           "(cudaMemcpy) or use a host backend");
  }
}

DeviceGuard::DeviceGuard(int device) {
  check_cuda(cudaGetDevice(&previous_), "reading the current CUDA device");
  if (previous_ != device) {
    check_cuda(cudaSetDevice(device), "selecting CUDA device " + std::to_string(device));
    restore_ = true;
  }
}

DeviceGuard::~DeviceGuard() {
  if (restore_) cudaSetDevice(previous_);
}

}  // namespace fp4gemm::cuda
