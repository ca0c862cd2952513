#pragma once
// The dynamic shared-memory limit of a kernel, raised once per device and kernel. Shared by the
// cuda_nvfp4 kernels that need more than the default 48 KiB.
#include <cuda_runtime_api.h>

namespace fp4gemm::cuda {

// Lets `kernel` use `bytes` of dynamic shared memory on the current device. The limit (a property
// of the kernel on each device) only ever rises: lowering it for a small grid would break a larger
// launch of another thread between its setting and its launch, or one captured earlier in a CUDA
// graph. The limits set are remembered per (device, kernel), so a launch costs no runtime call
// once its kernel's limit is high enough (a cudaDeviceReset, which the library never calls, would
// need them forgotten).
cudaError_t raise_dynamic_shared_limit(const void* kernel, int bytes);

}  // namespace fp4gemm::cuda
