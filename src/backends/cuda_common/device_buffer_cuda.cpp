#include "backends/cuda_common/device_buffer.hpp"

#include <utility>

#include "backends/cuda_common/cuda_check.hpp"

namespace fp4gemm::cuda {

DeviceBuffer::DeviceBuffer(std::size_t bytes, const std::string& what) : bytes_(bytes) {
  if (bytes == 0) return;
  check_cuda(cudaMalloc(&data_, bytes), "allocating " + std::to_string(bytes) + " bytes of device memory for " + what);
}

DeviceBuffer::~DeviceBuffer() {
  if (data_ != nullptr) cudaFree(data_);
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    if (data_ != nullptr) cudaFree(data_);
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

StreamBuffer::StreamBuffer(std::size_t bytes, cudaStream_t stream, const std::string& what) : stream_(stream) {
  if (bytes == 0) return;
  check_cuda(cudaMallocAsync(&data_, bytes, stream),
             "allocating " + std::to_string(bytes) + " bytes of stream-ordered scratch memory for " + what);
}

StreamBuffer::~StreamBuffer() {
  if (data_ != nullptr) cudaFreeAsync(data_, stream_);
}

DeviceBuffer upload(const void* host, std::size_t bytes, const std::string& what) {
  DeviceBuffer buffer(bytes, what);
  if (bytes > 0) check_cuda(cudaMemcpy(buffer.data(), host, bytes, cudaMemcpyHostToDevice), "uploading " + what);
  return buffer;
}

}  // namespace fp4gemm::cuda
