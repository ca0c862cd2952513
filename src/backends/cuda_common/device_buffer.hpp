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
  // From `pool` (WorkspacePool) instead of the device's current pool.
  StreamBuffer(std::size_t bytes, cudaStream_t stream, cudaMemPool_t pool, const std::string& what);
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

// A private stream-ordered memory pool on one device that keeps the memory it has reserved (its
// release threshold is unlimited): a call's scratch is there again at the next call, on any stream,
// without a new cudaMalloc, while concurrent streams still get separate memory. What it holds is
// the largest total in use at once; the owner bounds each allocation. Under CUDA-graph capture an
// allocation from it becomes a graph node owned by the graph, as cudaMallocAsync's does.
class WorkspacePool {
 public:
  explicit WorkspacePool(int device);  // creates the pool (not during graph capture)
  ~WorkspacePool();
  WorkspacePool(const WorkspacePool&) = delete;
  WorkspacePool& operator=(const WorkspacePool&) = delete;
  cudaMemPool_t handle() const { return pool_; }

 private:
  cudaMemPool_t pool_ = nullptr;
};

// Synchronous host -> device copy of `bytes` into a new buffer.
DeviceBuffer upload(const void* host, std::size_t bytes, const std::string& what);

}  // namespace fp4gemm::cuda
