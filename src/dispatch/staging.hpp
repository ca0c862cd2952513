#pragma once
// Moving operands between host and GPU memory when a backend runs somewhere other than where
// the data lives (GPU data falling back to a host backend; host data on a GPU backend; canaries).
// Built on two primitives, implemented with the CUDA runtime in staging_cuda.cpp and as
// host-only versions in staging_host_only.cpp (which refuse GPU memory with a clear error).
#include <cstddef>
#include <cstdint>

#include "fp4gemm/backend.hpp"
#include "fp4gemm/types.hpp"

namespace fp4gemm::dispatch {

// An owning buffer in host or GPU memory (uninitialised).
class StagingBuffer {
 public:
  StagingBuffer(Memory memory, std::size_t bytes, int device);
  ~StagingBuffer();
  StagingBuffer(const StagingBuffer&) = delete;
  StagingBuffer& operator=(const StagingBuffer&) = delete;
  void* data() const { return data_; }
  Memory memory() const { return memory_; }

 private:
  Memory memory_;
  void* data_ = nullptr;
  int device_ = 0;
};

// Copies `rows` rows of `row_bytes` each between any two memories, and waits until the copy is
// complete (ordered after earlier work on `cuda_stream` when GPU memory is involved).
void copy_rows(void* destination, std::size_t destination_pitch, Memory destination_memory, const void* source,
               std::size_t source_pitch, Memory source_memory, std::size_t row_bytes, std::int64_t rows, int device,
               void* cuda_stream);

// Runs `backend` on operands that may live elsewhere: when the activation or output is not in
// backend.memory(), copies the activation there, runs into a scratch output there, and copies the
// result back into `out`. `device` is the CUDA ordinal used for GPU memory.
void run_with_staging(Backend& backend, const ActivationView& a, const PreparedWeight& weight, float alpha,
                      const MutableDenseView& out, const RunContext& context, int device);

}  // namespace fp4gemm::dispatch
