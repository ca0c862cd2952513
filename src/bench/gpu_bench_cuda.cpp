// GPU side of `fp4gemm bench`: our CUDA backends and their vendor peers, each timed as CUDA-graph
// replays of calls that rotate through enough weight copies to read every weight from HBM.

#include "backends/cuda_common/cuda_check.hpp"
#include "backends/cuda_common/device_buffer.hpp"
#include "bench/bench.hpp"
#include "bench/gpu_fill.hpp"
#include "bench/gpu_peers.hpp"
#include "bench/gpu_stream_floor.hpp"
#include "bench/gpu_support.hpp"
#include "fp4gemm/format/nvfp4_matrix.hpp"
#include "fp4gemm/registry.hpp"

namespace fp4gemm::bench {
namespace {

// Random activations of the problem's type in device memory (NVFP4 ones quantized on the host).
struct DeviceActivation {
  cuda::DeviceBuffer values, scales;
  ActivationView view;
  float input_scale = 1.0f;
};

DeviceActivation make_activation(const GemmProblem& problem, int device, cudaStream_t stream) {
  DeviceActivation activation;
  const std::int64_t m = problem.m, k = problem.k;
  if (problem.activation == ActivationType::bf16) {
    activation.values = cuda::DeviceBuffer(std::size_t(m * k) * 2, "the benchmark activations");
    fill_random_bf16(activation.values.as<std::uint16_t>(), m * k, 31, stream);
    activation.view = ActivationView::from_dense({activation.values.data(), DType::bf16, m, k, 0, Memory::cuda, device});
    return activation;
  }
  const std::vector<float> values = random_normal_values(m * k, 32);
  const DenseView host{values.data(), DType::f32, m, k};
  if (problem.activation == ActivationType::f32) {
    activation.values = cuda::upload(values.data(), values.size() * sizeof(float), "the benchmark activations");
    activation.view = ActivationView::from_dense({activation.values.data(), DType::f32, m, k, 0, Memory::cuda, device});
    return activation;
  }
  activation.input_scale = activation_global_scale(host);
  const Nvfp4Matrix quantized = quantize_activation(host, activation.input_scale);
  activation.values = cuda::upload(quantized.codes.data(), quantized.codes.size(), "the benchmark activation codes");
  activation.scales = cuda::upload(quantized.scales.data(), quantized.scales.size(), "the benchmark activation scales");
  Nvfp4View view = quantized.view();
  view.codes = activation.values.as<const std::uint8_t>();
  view.scales = activation.scales.as<const std::uint8_t>();
  view.memory = Memory::cuda;
  view.device = device;
  activation.view = ActivationView::from_nvfp4(view);
  return activation;
}

Result time_backend(Backend& backend, const GemmProblem& problem, const Nvfp4Matrix& weight, const DeviceInfo& device,
                    cudaStream_t stream) {
  Result result{backend.name(), false, problem};
  const int copies = rotation_copies(double(problem.n) * double(problem.k) * kNvfp4BytesPerElement, l2_bytes());
  std::vector<std::unique_ptr<PreparedWeight>> prepared;
  for (int copy = 0; copy < copies; ++copy) prepared.push_back(backend.prepare(weight.view(), device));
  const DeviceActivation activation = make_activation(problem, device.index, stream);
  cuda::DeviceBuffer out(std::size_t(problem.m * problem.n) * dtype_size(problem.output), "the benchmark output");
  const MutableDenseView out_view{out.data(), problem.output, problem.m, problem.n, 0, Memory::cuda, device.index};
  const float alpha = weight.global_scale * activation.input_scale;  // as a deployment computes it
  const RunContext context{stream};
  const CallTiming timing = time_calls(stream, calls_per_graph(copies), [&](int call) {
    backend.run(activation.view, *prepared[std::size_t(call % copies)], alpha, out_view, context);
  });
  result.resident_bytes = prepared.front()->resident_bytes;
  result.dense_copy = backend.residency(problem.n, problem.k).dense_copy;
  result.time_us = timing.timing.median_us;
  result.spread = timing.timing.spread;
  result.repeats = timing.timing.repeats;
  result.note = timing_note(timing, copies);
  result.kernel = backend.kernel_plan(problem, device);  // e.g. the launch shape and whether PDL overlapped the calls
  return result;
}

Result failed(const std::string& name, bool peer, const GemmProblem& problem, const std::string& why) {
  Result result{name, peer, problem};
  result.ok = false;
  result.note = why;
  return result;
}

// Runs one timing; an Error (or any exception) becomes a row that says what failed.
template <class Timer>
Result guarded(const std::string& name, bool peer, const GemmProblem& problem, Timer timer) {
  try {
    return timer();
  } catch (const Error& error) {
    if (error.code() == ErrorCode::unrecoverable) throw;  // the context is gone: nothing later can run
    return failed(name, peer, problem, std::string("failed: ") + error.what());
  }
}

}  // namespace

std::vector<Result> bench_gpu(int device, const std::vector<GemmProblem>& problems, const std::vector<std::string>& backends,
                              bool include_peers) {
  cuda::DeviceGuard guard(device);
  const auto devices = probe_cuda_devices();
  if (device < 0 || device >= int(devices.size())) throw_invalid("no CUDA device " + std::to_string(device) + ": " + cuda_unavailable_reason());
  const DeviceInfo& info = devices[std::size_t(device)];
  Stream stream;
  std::vector<Result> results;
  Nvfp4Matrix weight;  // reused while N and K stay the same (the CLI orders problems shape by shape)
  Result floor;        // the stream floor of that weight, timed once per N x K
  for (const GemmProblem& problem : problems) {
    make_bench_weight(weight, problem.n, problem.k);
    for (const std::string& name : backends) {
      auto backend = make_backend(name);
      const CheckResult check = backend->check(problem, info);
      if (!check) {
        results.push_back(failed(name, false, problem, check.reason));
        continue;
      }
      results.push_back(guarded(name, false, problem, [&] { return time_backend(*backend, problem, weight, info, stream.get()); }));
    }
    if (!include_peers) continue;
    results.push_back(guarded("cublas_bf16", true, problem, [&] { return time_cublas_bf16(problem, weight, stream.get()); }));
    results.push_back(guarded("cublaslt_fp8", true, problem, [&] { return time_cublaslt_fp8(problem, stream.get()); }));
    if (floor.backend.empty() || floor.problem.n != problem.n || floor.problem.k != problem.k) {
      floor = guarded("stream_floor", true, problem, [&] { return time_stream_floor(problem, info, stream.get()); });
      floor.floor = true;  // here, so that a failed timing's row is marked too
    }
    Result floor_row = floor;
    floor_row.problem = problem;
    results.push_back(floor_row);
  }
  return results;
}

}  // namespace fp4gemm::bench
