// The read-only streaming kernel behind the bench's stream floor (gpu_stream_floor.hpp).
#include <vector>

#include "backends/cuda_common/cuda_check.hpp"
#include "backends/cuda_common/device_buffer.hpp"
#include "backends/cuda_common/programmatic_launch.cuh"
#include "backends/cuda_common/streaming_loads.cuh"
#include "bench/gpu_stream_floor.hpp"
#include "bench/gpu_support.hpp"

namespace fp4gemm::bench {
namespace {

// Full occupancy (2048 threads per SM on SM 8.0 and 9.0) with four 16-byte loads in flight per
// thread: 128 KiB requested per SM, about four times the H200's bandwidth-latency product per SM,
// so the loads in flight never limit the read.
constexpr int kThreads = 512;
constexpr int kBlocksPerSm = 4;
constexpr int kLoadsInFlight = 4;
// Any value the XOR of the weight bytes is not expected to take: the store it guards keeps the
// loads alive and practically never happens.
constexpr unsigned kUnlikelyDigest = 0x9E3779B9u;

__global__ void __launch_bounds__(kThreads) stream_read_kernel(const uint4* data, std::int64_t count, unsigned* sink) {
  allow_dependent_launch();  // the next call may start streaming at once
  const std::int64_t threads = std::int64_t(gridDim.x) * blockDim.x;
  std::int64_t index = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  unsigned digest = 0;
  // Every round's loads are issued before any is used, the last round's past `count` predicated
  // off, so a weight smaller than one round still has all of its loads in flight at once.
  for (; index < count; index += kLoadsInFlight * threads) {
    uint4 words[kLoadsInFlight];
#pragma unroll
    for (int load = 0; load < kLoadsInFlight; ++load) {
      const std::int64_t at = index + load * threads;
      words[load] = at < count ? load_stream_16(data + at) : make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int load = 0; load < kLoadsInFlight; ++load) digest ^= words[load].x ^ words[load].y ^ words[load].z ^ words[load].w;
  }
  wait_for_prior_grids();  // the store below is ordered after the previous call's
  if (digest == kUnlikelyDigest) atomicAdd(sink, 1u);
}

}  // namespace

Result time_stream_floor(const GemmProblem& problem, const DeviceInfo& device, cudaStream_t stream) {
  Result result{"stream_floor", true, problem};
  // The NVFP4 bytes of the weight (0.5 B per element plus one scale byte per 16), in whole 16-byte words.
  const std::int64_t bytes = problem.n * problem.k / 16 * 9;
  const std::int64_t words = (bytes + 15) / 16;
  const int copies = rotation_copies(double(bytes), l2_bytes());
  std::vector<cuda::DeviceBuffer> weights;
  for (int copy = 0; copy < copies; ++copy) {
    weights.emplace_back(std::size_t(words) * 16, "the stream floor's weight bytes");
    // What the bytes hold does not change how fast they are read (no compression on plain allocations).
    cuda::check_cuda(cudaMemsetAsync(weights.back().data(), 0x5A, std::size_t(words) * 16, stream),
                     "bench: filling the stream floor's weights");
  }
  cuda::DeviceBuffer sink(sizeof(unsigned), "the stream floor's sink");
  const bool programmatic = device.sm() >= 90;
  cudaLaunchAttribute attribute = programmatic_launch_attribute(programmatic);
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(unsigned(kBlocksPerSm * device.multiprocessors));
  config.blockDim = dim3(kThreads);
  config.stream = stream;
  config.attrs = &attribute;
  config.numAttrs = 1;
  const CallTiming timing = time_calls(stream, calls_per_graph(copies), [&](int call) {
    cuda::check_cuda(cudaLaunchKernelEx(&config, stream_read_kernel, weights[std::size_t(call % copies)].as<const uint4>(), words,
                                        sink.as<unsigned>()),
                     "bench: launching the stream floor's kernel");
  });
  result.time_us = timing.timing.median_us;
  result.spread = timing.timing.spread;
  result.repeats = timing.timing.repeats;
  result.note = std::string("read-only kernel over the weight's NVFP4 bytes, no compute") +
                (programmatic ? ", PDL between calls" : "") + "; " + timing_note(timing, copies);
  return result;
}

}  // namespace fp4gemm::bench
