// Staging primitives with the CUDA runtime: cudaMalloc'd scratch and pitched 2-D copies.
#include <cuda_runtime_api.h>

#include <cstdlib>
#include <new>

#include "backends/cuda_common/cuda_check.hpp"
#include "dispatch/staging.hpp"

namespace fp4gemm::dispatch {
namespace {

cudaMemcpyKind kind_of(Memory destination, Memory source) {
  if (destination == Memory::host) return source == Memory::host ? cudaMemcpyHostToHost : cudaMemcpyDeviceToHost;
  return source == Memory::host ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToDevice;
}

}  // namespace

StagingBuffer::StagingBuffer(Memory memory, std::size_t bytes, int device) : memory_(memory), device_(device) {
  if (bytes == 0) bytes = 1;
  if (memory == Memory::host) {
    data_ = std::malloc(bytes);
    if (data_ == nullptr) throw std::bad_alloc();
    return;
  }
  const cuda::DeviceGuard guard(device);
  cuda::check_cuda(cudaMalloc(&data_, bytes), "runner: allocating " + std::to_string(bytes) + " bytes of staging memory");
}

StagingBuffer::~StagingBuffer() {
  if (memory_ == Memory::host) {
    std::free(data_);
  } else if (data_ != nullptr) {
    // An error here has nowhere to go (destructor); a sticky one resurfaces at the next call.
    int previous = 0;
    if (cudaGetDevice(&previous) == cudaSuccess && cudaSetDevice(device_) == cudaSuccess) {
      cudaFree(data_);
      cudaSetDevice(previous);
    }
  }
}

void copy_rows(void* destination, std::size_t destination_pitch, Memory destination_memory, const void* source,
               std::size_t source_pitch, Memory source_memory, std::size_t row_bytes, std::int64_t rows, int device,
               void* cuda_stream) {
  if (rows == 0 || row_bytes == 0) return;
  const cuda::DeviceGuard guard(device);
  const auto stream = static_cast<cudaStream_t>(cuda_stream);
  cuda::check_cuda(cudaMemcpy2DAsync(destination, destination_pitch, source, source_pitch, row_bytes, std::size_t(rows),
                                        kind_of(destination_memory, source_memory), stream),
                      "runner: staging a copy between host and GPU memory");
  // The host side must not be read or freed before the copy lands.
  cuda::check_cuda(cudaStreamSynchronize(stream), "runner: waiting for a staging copy");
}

}  // namespace fp4gemm::dispatch
