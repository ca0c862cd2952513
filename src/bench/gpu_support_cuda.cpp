#include "bench/gpu_support.hpp"

#include <algorithm>

#include "backends/cuda_common/cuda_check.hpp"
#include "bench/gpu_bench_settings.hpp"

namespace fp4gemm::bench {
namespace {

using cuda::check_cuda;

class Events {
 public:
  Events() {
    check_cuda(cudaEventCreate(&start), "bench: creating a CUDA event");
    check_cuda(cudaEventCreate(&stop), "bench: creating a CUDA event");
  }
  ~Events() {
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
  }
  Events(const Events&) = delete;
  Events& operator=(const Events&) = delete;
  cudaEvent_t start = nullptr, stop = nullptr;
};

class GraphExec {
 public:
  ~GraphExec() {
    if (exec != nullptr) cudaGraphExecDestroy(exec);
    if (graph != nullptr) cudaGraphDestroy(graph);
  }
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
};

// Captures the calls; returns "" on success, else why capture failed (the stream is left uncaptured).
std::string capture(cudaStream_t stream, int calls, const std::function<void(int)>& enqueue, GraphExec& out) {
  // Thread-local mode: other threads are unaffected, and a call that is illegal during capture
  // (cudaMalloc, a synchronisation) fails here instead of silently running outside the graph.
  check_cuda(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "bench: beginning stream capture");
  std::string error;
  try {
    for (int call = 0; call < calls; ++call) enqueue(call);
  } catch (const std::exception& failure) {
    error = failure.what();
  }
  const cudaError_t ended = cudaStreamEndCapture(stream, &out.graph);
  if (error.empty() && ended != cudaSuccess) error = std::string("ending capture: ") + cudaGetErrorString(ended);
  if (error.empty()) {
    const cudaError_t instantiated = cudaGraphInstantiate(&out.exec, out.graph, 0);
    if (instantiated != cudaSuccess) error = std::string("instantiating the graph: ") + cudaGetErrorString(instantiated);
  }
  if (!error.empty()) cudaGetLastError();  // capture errors are not sticky; clear them for the fallback
  return error;
}

double elapsed_us(const Events& events) {
  check_cuda(cudaEventSynchronize(events.stop), "bench: waiting for the timed work");
  float milliseconds = 0;
  check_cuda(cudaEventElapsedTime(&milliseconds, events.start, events.stop), "bench: reading the CUDA event timer");
  return double(milliseconds) * 1e3;
}

}  // namespace

Stream::Stream() { check_cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "bench: creating a CUDA stream"); }
Stream::~Stream() { cudaStreamDestroy(stream_); }

CublasHandle::CublasHandle(cudaStream_t stream) {
  cuda::check_cublas(cublasCreate(&handle_), "bench: creating a cuBLAS handle");
  cuda::check_cublas(cublasSetStream(handle_, stream), "bench: binding a stream to cuBLAS");
}
CublasHandle::~CublasHandle() { cublasDestroy(handle_); }

CublasLtHandle::CublasLtHandle() { cuda::check_cublas(cublasLtCreate(&handle_), "bench: creating a cuBLASLt handle"); }
CublasLtHandle::~CublasLtHandle() { cublasLtDestroy(handle_); }

std::int64_t l2_bytes() {
  int device = 0, bytes = 0;
  check_cuda(cudaGetDevice(&device), "bench: reading the current device");
  check_cuda(cudaDeviceGetAttribute(&bytes, cudaDevAttrL2CacheSize, device), "bench: reading the L2 size");
  return bytes;
}

int rotation_copies(double bytes_per_copy, std::int64_t l2) {
  const double needed = gpu_settings::kRotationL2Multiple * double(l2);
  const int copies = int(needed / std::max(bytes_per_copy, 1.0)) + 1;
  return std::clamp(copies, gpu_settings::kMinCopies, gpu_settings::kMaxCopies);
}

int calls_per_graph(int copies) {
  const int rotations = (gpu_settings::kMinCallsPerGraph + copies - 1) / copies;
  return rotations * copies;
}

CallTiming time_calls(cudaStream_t stream, int calls, const std::function<void(int)>& enqueue) {
  CallTiming result;
  result.calls = calls;
  Events events;
  // One direct call first, outside capture: library handles, lazily loaded kernels and workspaces
  // get set up here, and a call that fails at all fails with its own error, not a capture error.
  enqueue(0);
  check_cuda(cudaStreamSynchronize(stream), "bench: the first (untimed) call");
  GraphExec graph;
  result.capture_error = capture(stream, calls, enqueue, graph);
  result.graph = result.capture_error.empty();
  const auto replay = [&] {
    check_cuda(cudaEventRecord(events.start, stream), "bench: recording a CUDA event");
    if (result.graph) {
      check_cuda(cudaGraphLaunch(graph.exec, stream), "bench: launching the captured graph");
    } else {
      for (int call = 0; call < calls; ++call) enqueue(call);
    }
    check_cuda(cudaEventRecord(events.stop, stream), "bench: recording a CUDA event");
    return elapsed_us(events) / calls;
  };
  result.timing = time_repeatedly(replay, gpu_settings::kWarmupReplays, gpu_settings::kMaxReplays, gpu_settings::kMinSeconds);
  return result;
}

std::string timing_note(const CallTiming& timing, int copies) {
  std::string note = timing.graph ? "CUDA graph of " + std::to_string(timing.calls) + " calls"
                                  : "direct launches (graph capture failed: " + timing.capture_error + ")";
  note += ", " + std::to_string(copies) + " weight copies rotated (> " +
          std::to_string(int(gpu_settings::kRotationL2Multiple)) + "x L2), median of " +
          std::to_string(timing.timing.repeats) + " replays";
  return note;
}

}  // namespace fp4gemm::bench
