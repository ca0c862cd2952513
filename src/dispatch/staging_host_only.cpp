// Staging primitives for a build without CUDA: host memory only; GPU memory is refused with a
// sentence saying so (there is no GPU data in such a build unless the caller made it elsewhere).
#ifndef FP4GEMM_WITH_CUDA
#include <cstdlib>
#include <cstring>
#include <new>

#include "dispatch/staging.hpp"
#include "fp4gemm/error.hpp"

namespace fp4gemm::dispatch {
namespace {

[[noreturn]] void refuse_gpu_memory() {
  throw Error(ErrorCode::unsupported,
              "operands in CUDA memory cannot be staged: this build has no CUDA support (rebuild with FP4GEMM_CUDA=ON)");
}

}  // namespace

StagingBuffer::StagingBuffer(Memory memory, std::size_t bytes, int device) : memory_(memory), device_(device) {
  if (memory == Memory::cuda) refuse_gpu_memory();
  data_ = std::malloc(bytes == 0 ? 1 : bytes);
  if (data_ == nullptr) throw std::bad_alloc();
}

StagingBuffer::~StagingBuffer() { std::free(data_); }

void copy_rows(void* destination, std::size_t destination_pitch, Memory destination_memory, const void* source,
               std::size_t source_pitch, Memory source_memory, std::size_t row_bytes, std::int64_t rows, int, void*) {
  if (destination_memory == Memory::cuda || source_memory == Memory::cuda) refuse_gpu_memory();
  for (std::int64_t row = 0; row < rows; ++row) {
    std::memcpy(static_cast<char*>(destination) + row * destination_pitch,
                static_cast<const char*>(source) + row * source_pitch, row_bytes);
  }
}

}  // namespace fp4gemm::dispatch
#endif
