#pragma once
// Owners of GPU memory. DeviceBuffer: a plain cudaMalloc allocation for long-lived data (prepared
// weights, benchmark operands). StreamBuffer: a stream-ordered allocation (cudaMallocAsync) for a
// call's scratch space; it is freed on the same stream, so it is safe inside CUDA-graph capture
// (the graph gets an allocation node and a free node) and needs no synchronisation.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace fp4gemm::cuda {

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  // Allocates `bytes` on the current device; `what` names the buffer in the error message.
  DeviceBuffer(std::size_t bytes, const std::string& what);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* data() const { return data_; }
  template <class T>
  T* as() const { return static_cast<T*>(data_); }
  std::size_t bytes() const { return bytes_; }

 private:
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
};

class StreamBuffer {
 public:
  StreamBuffer(std::size_t bytes, cudaStream_t stream, const std::string& what);
  ~StreamBuffer();  // cudaFreeAsync on the allocating stream
  StreamBuffer(const StreamBuffer&) = delete;
  StreamBuffer& operator=(const StreamBuffer&) = delete;

  void* data() const { return data_; }
  template <class T>
  T* as() const { return static_cast<T*>(data_); }

 private:
  void* data_ = nullptr;
  cudaStream_t stream_ = nullptr;
};

// Synchronous host -> device copy of `bytes` into a new buffer.
DeviceBuffer upload(const void* host, std::size_t bytes, const std::string& what);

}  // namespace fp4gemm::cuda
