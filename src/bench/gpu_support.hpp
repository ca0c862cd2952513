#pragma once
// Pieces every GPU timing shares: owners of streams and library handles, the rotation count that
// keeps weights out of L2, and the CUDA-graph timer.
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <functional>
#include <string>

#include "bench/bench.hpp"

namespace fp4gemm::bench {

class Stream {
 public:
  Stream();
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const { return stream_; }

 private:
  cudaStream_t stream_ = nullptr;
};

class CublasHandle {
 public:
  explicit CublasHandle(cudaStream_t stream);
  ~CublasHandle();
  CublasHandle(const CublasHandle&) = delete;
  CublasHandle& operator=(const CublasHandle&) = delete;
  cublasHandle_t get() const { return handle_; }

 private:
  cublasHandle_t handle_ = nullptr;
};

class CublasLtHandle {
 public:
  CublasLtHandle();
  ~CublasLtHandle();
  CublasLtHandle(const CublasLtHandle&) = delete;
  CublasLtHandle& operator=(const CublasLtHandle&) = delete;
  cublasLtHandle_t get() const { return handle_; }

 private:
  cublasLtHandle_t handle_ = nullptr;
};

// L2 size of the current device, in bytes.
std::int64_t l2_bytes();

// How many copies of `bytes_per_copy` make a rotation larger than the L2 multiple in the settings.
int rotation_copies(double bytes_per_copy, std::int64_t l2);

// Calls per captured graph: a whole number of rotations of `copies`, at least the settings' minimum.
int calls_per_graph(int copies);

struct CallTiming {
  Timing timing;       // per call, in microseconds
  int calls = 0;       // calls per timed replay
  bool graph = true;   // false: capture failed and direct launches were timed instead
  std::string capture_error;
};

// Times `calls` consecutive calls of `enqueue(call_index)` on `stream`: captured once into a CUDA
// graph whose replays are timed with events (median over replays, divided by `calls`). When capture
// fails (a call that cannot be captured), the same calls are timed as direct launches, and
// capture_error says why. Errors from `enqueue` itself propagate.
CallTiming time_calls(cudaStream_t stream, int calls, const std::function<void(int)>& enqueue);

// "CUDA graph of 20 calls, 5 weight copies rotated (> 2x L2), median of 50 replays".
std::string timing_note(const CallTiming& timing, int copies);

}  // namespace fp4gemm::bench
