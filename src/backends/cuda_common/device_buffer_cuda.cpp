#include "backends/cuda_common/device_buffer.hpp"

#include <cstdint>
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

StreamBuffer::StreamBuffer(std::size_t bytes, cudaStream_t stream, cudaMemPool_t pool, const std::string& what)
    : stream_(stream) {
  if (bytes == 0) return;
  check_cuda(cudaMallocFromPoolAsync(&data_, bytes, pool, stream),
             "allocating " + std::to_string(bytes) + " bytes of workspace for " + what);
}

StreamBuffer::~StreamBuffer() {
  if (data_ != nullptr) cudaFreeAsync(data_, stream_);
}

WorkspacePool::WorkspacePool(int device) {
  cudaMemPoolProps properties{};
  properties.allocType = cudaMemAllocationTypePinned;
  properties.location.type = cudaMemLocationTypeDevice;
  properties.location.id = device;
  check_cuda(cudaMemPoolCreate(&pool_, &properties), "creating a workspace memory pool on CUDA device " + std::to_string(device));
  // NOTE: the default threshold (0) hands unused memory back at every synchronisation, so each
  // call would map its workspace again; a workspace pool exists to keep it.
  std::uint64_t keep_everything = UINT64_MAX;
  const cudaError_t status = cudaMemPoolSetAttribute(pool_, cudaMemPoolAttrReleaseThreshold, &keep_everything);
  if (status != cudaSuccess) {
    cudaMemPoolDestroy(std::exchange(pool_, nullptr));  // the destructor does not run after a throw here
    check_cuda(status, "setting the workspace pool's release threshold");
  }
}

WorkspacePool::~WorkspacePool() {
  if (pool_ != nullptr) cudaMemPoolDestroy(pool_);
}

DeviceBuffer upload(const void* host, std::size_t bytes, const std::string& what) {
  DeviceBuffer buffer(bytes, what);
  if (bytes > 0) check_cuda(cudaMemcpy(buffer.data(), host, bytes, cudaMemcpyHostToDevice), "uploading " + what);
  return buffer;
}

}  // namespace fp4gemm::cuda
