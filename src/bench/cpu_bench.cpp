// CPU side of the benchmark: ceilings, our host backends and the OpenBLAS SGEMM peer.
#include <cblas.h>
#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "bench/bench.hpp"
#include "fp4gemm/format/half.hpp"
#include "fp4gemm/format/nvfp4_matrix.hpp"
#include "fp4gemm/registry.hpp"

namespace fp4gemm::bench {
namespace {

using Clock = std::chrono::steady_clock;

double elapsed_us(Clock::time_point start) {
  return std::chrono::duration<double, std::micro>(Clock::now() - start).count();
}

std::int64_t last_level_cache_bytes() {
  const long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
  return l3 > 0 ? l3 : 32 << 20;
}

// Enough copies of a working set that cycling through them defeats the last-level cache.
int rotation_copies(double bytes) {
  const double needed = 2.0 * double(last_level_cache_bytes());
  return std::clamp(int(needed / std::max(bytes, 1.0)) + 1, 1, 16);
}

struct HostActivation {
  std::vector<float> f32;
  std::vector<std::uint16_t> bf16;
  Nvfp4Matrix nvfp4;
  ActivationView view;
};

HostActivation make_activation(const GemmProblem& problem) {
  HostActivation activation;
  activation.f32 = random_normal_values(problem.m * problem.k, 11);
  const DenseView dense{activation.f32.data(), DType::f32, problem.m, problem.k};
  if (problem.activation == ActivationType::bf16) {
    for (float value : activation.f32) activation.bf16.push_back(float_to_bf16(value));
    activation.view = ActivationView::from_dense({activation.bf16.data(), DType::bf16, problem.m, problem.k});
  } else if (problem.activation == ActivationType::nvfp4) {
    activation.nvfp4 = quantize_activation(dense, activation_global_scale(dense));
    activation.view = ActivationView::from_nvfp4(activation.nvfp4.view());
  } else {
    activation.view = ActivationView::from_dense(dense);
  }
  return activation;
}

Result time_backend(Backend& backend, const GemmProblem& problem, const Nvfp4Matrix& weight) {
  Result result{backend.name(), false, problem};
  const DeviceInfo cpu = probe_cpu();
  const int copies = rotation_copies(problem.minimal_bytes());
  std::vector<std::unique_ptr<PreparedWeight>> prepared;
  for (int i = 0; i < copies; ++i) prepared.push_back(backend.prepare(weight.view(), cpu));
  const HostActivation activation = make_activation(problem);
  std::vector<std::uint8_t> out(static_cast<std::size_t>(problem.m * problem.n) * dtype_size(problem.output));
  const MutableDenseView out_view{out.data(), problem.output, problem.m, problem.n};
  int next = 0;
  const Timing timing = time_repeatedly(
      [&] {
        const auto start = Clock::now();
        backend.run(activation.view, *prepared[next], 1.0f, out_view, {});
        next = (next + 1) % copies;
        return elapsed_us(start);
      },
      2, 200, 0.5);
  result.resident_bytes = prepared.front()->resident_bytes;
  result.dense_copy = backend.residency(problem.n, problem.k).dense_copy;
  result.time_us = timing.median_us;
  result.spread = timing.spread;
  result.repeats = timing.repeats;
  result.note = "median of " + std::to_string(timing.repeats) + ", " + std::to_string(copies) + " weight copies rotated";
  return result;
}

Result time_openblas(const GemmProblem& problem, const Nvfp4Matrix& weight) {
  Result result{"openblas_sgemm", true, problem};
  const std::vector<float> dense = weight.dequantize();
  const std::vector<float> activation = random_normal_values(problem.m * problem.k, 12);
  std::vector<float> out(static_cast<std::size_t>(problem.m * problem.n));
  const int copies = rotation_copies(double(problem.n * problem.k) * 4.0);
  std::vector<std::vector<float>> weights(static_cast<std::size_t>(copies), dense);
  int next = 0;
  const Timing timing = time_repeatedly(
      [&] {
        const auto start = Clock::now();
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(problem.m), int(problem.n), int(problem.k), 1.0f,
                    activation.data(), int(problem.k), weights[std::size_t(next)].data(), int(problem.k), 0.0f, out.data(),
                    int(problem.n));
        next = (next + 1) % copies;
        return elapsed_us(start);
      },
      2, 200, 0.5);
  result.time_us = timing.median_us;
  result.spread = timing.spread;
  result.repeats = timing.repeats;
  result.note = "FP32 weights (dequantized), FP32 activations";
  return result;
}

}  // namespace

Ceilings measure_cpu_ceilings() {
  Ceilings ceilings;
  // SGEMM first: OpenMP workers spinning after the bandwidth loop would slow OpenBLAS down.
  const int size = 2048;
  const std::vector<float> a = random_normal_values(std::int64_t(size) * size, 1), b = random_normal_values(std::int64_t(size) * size, 2);
  std::vector<float> c(static_cast<std::size_t>(size) * size);
  double best_us = 1e30;
  for (int trial = 0; trial < 4; ++trial) {
    const auto start = Clock::now();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, size, size, size, 1.0f, a.data(), size, b.data(), size, 0.0f,
                c.data(), size);
    if (trial > 0) best_us = std::min(best_us, elapsed_us(start));
  }
  ceilings.compute_tflops = 2.0 * size * double(size) * size / (best_us * 1e-6) / 1e12;
  ceilings.compute_method = "OpenBLAS SGEMM 2048^3, best of 3";
  // Streaming read: XOR-reduce 64-bit words of a buffer 8x the last-level cache, best of 5.
  const std::int64_t words = std::max<std::int64_t>(last_level_cache_bytes() * 8, 256 << 20) / 8;
  std::vector<std::uint64_t> buffer(static_cast<std::size_t>(words));
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < words; ++i) buffer[std::size_t(i)] = std::uint64_t(i) * 0x9E3779B97F4A7C15ull;
  best_us = 1e30;
  std::uint64_t sink = 0;
  for (int trial = 0; trial < 5; ++trial) {
    const auto start = Clock::now();
    std::uint64_t checksum = 0;
#pragma omp parallel for schedule(static) reduction(^ : checksum)
    for (std::int64_t i = 0; i < words; ++i) checksum ^= buffer[std::size_t(i)];
    best_us = std::min(best_us, elapsed_us(start));
    sink ^= checksum;
  }
  ceilings.bandwidth_gbps = double(words) * 8.0 / (best_us * 1e-6) / 1e9;
  ceilings.bandwidth_method = "streaming read of " + std::to_string(words * 8 >> 20) + " MiB, " +
                              std::to_string(omp_get_max_threads()) + " threads, best of 5" + (sink == 1 ? " " : "");

  return ceilings;
}

std::vector<Result> bench_cpu(const std::vector<GemmProblem>& problems, const std::vector<std::string>& backends,
                              bool include_peers) {
  std::vector<Result> results;
  Nvfp4Matrix weight;  // reused while N and K stay the same (the CLI orders problems shape by shape)
  for (const GemmProblem& problem : problems) {
    make_bench_weight(weight, problem.n, problem.k);
    for (const std::string& name : backends) {
      auto backend = make_backend(name);
      const CheckResult check = backend->check(problem, probe_cpu());
      if (!check) {
        Result skipped{name, false, problem};
        skipped.ok = false;
        skipped.note = check.reason;
        results.push_back(skipped);
        continue;
      }
      results.push_back(time_backend(*backend, problem, weight));
    }
    if (include_peers) results.push_back(time_openblas(problem, weight));
  }
  return results;
}

}  // namespace fp4gemm::bench
