#pragma once
// Kernels whose warpgroups trade registers with setmaxnreg balance what some give back against what
// others take, from the count every thread gets at launch; another count would hang the kernel
// (the taking warpgroup waits forever), so their launchers check it first.
#include <cuda_runtime_api.h>

namespace fp4gemm::cuda {

// cudaSuccess when `kernel` gets exactly `expected` registers a thread at launch, else
// cudaErrorInvalidConfiguration (or the attribute query's error).
template <class Kernel>
cudaError_t expect_launch_registers(Kernel kernel, int expected) {
  cudaFuncAttributes attributes = {};
  if (const cudaError_t status = cudaFuncGetAttributes(&attributes, kernel); status != cudaSuccess) return status;
  return attributes.numRegs == expected ? cudaSuccess : cudaErrorInvalidConfiguration;
}

}  // namespace fp4gemm::cuda
