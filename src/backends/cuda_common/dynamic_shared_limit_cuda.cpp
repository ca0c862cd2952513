#include "backends/cuda_common/dynamic_shared_limit.hpp"

#include <map>
#include <mutex>
#include <utility>

namespace fp4gemm::cuda {

cudaError_t raise_dynamic_shared_limit(const void* kernel, int bytes) {
  static std::mutex limits_mutex;
  static std::map<std::pair<int, const void*>, int> limits;  // (device, kernel) -> the limit set there
  int device = 0;
  if (const cudaError_t status = cudaGetDevice(&device); status != cudaSuccess) return status;
  const std::lock_guard<std::mutex> lock(limits_mutex);
  int& limit = limits[{device, kernel}];
  if (bytes > limit) {
    if (const cudaError_t configured = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
        configured != cudaSuccess) {
      return configured;
    }
    limit = bytes;
  }
  return cudaSuccess;
}

}  // namespace fp4gemm::cuda
