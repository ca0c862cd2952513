#pragma once
// Benchmark engine behind `fp4gemm bench`: ceilings measured in the same run, our backends and
// their peers timed the same way, and the roofline fraction of each.
#include <functional>
#include <string>
#include <vector>

#include "fp4gemm/device.hpp"
#include "fp4gemm/format/nvfp4_matrix.hpp"
#include "fp4gemm/types.hpp"

namespace fp4gemm::bench {

// The two ceilings of the roofline, measured on the device in this run.
struct Ceilings {
  double bandwidth_gbps = 0;   // bytes per second / 1e9
  double compute_tflops = 0;   // dense FP32 (CPU) or BF16 (GPU) matrix rate
  std::string bandwidth_method;
  std::string compute_method;
};

struct Result {
  std::string backend;  // ours ("cpu", ...) or a peer ("openblas_sgemm", "cublas_bf16", ...)
  bool peer = false;
  GemmProblem problem;
  double time_us = 0;   // median
  double spread = 0;    // (p90 - p10) / median, a noise estimate
  int repeats = 0;
  std::string note;     // why a row is missing, or how it was timed
  std::string kernel;   // what ran, in the backend's words (Backend::kernel_plan); empty if it has none
  bool ok = true;
  bool floor = false;   // the GPU stream floor (gpu_stream_floor.hpp): a bound to compare with, not a peer to beat
  // Bytes the timed layout keeps per weight (PreparedWeight::resident_bytes; a peer's own copy of
  // the weight: 2 B/element for BF16, 1 for FP8); -1 when not known.
  std::int64_t resident_bytes = -1;
  bool dense_copy = false;  // the backend keeps a dense copy of the weight (never auto's or the tuner's pick)

  double tflops() const { return problem.flops() / (time_us * 1e-6) / 1e12; }
  double weight_gbps() const { return double(problem.n) * double(problem.k) * kNvfp4BytesPerElement / (time_us * 1e-6) / 1e9; }
};

double roofline_us(const GemmProblem& problem, const Ceilings& ceilings);

// Median of repeated timings of `call`, each sample in microseconds from `sample`. Runs until
// `min_seconds` of samples or `max_repeats`, after `warmup` untimed calls.
struct Timing {
  double median_us = 0;
  double spread = 0;
  int repeats = 0;
};
Timing time_repeatedly(const std::function<double()>& sample_us, int warmup, int max_repeats, double min_seconds);

// Standard-normal FP32 values from `seed`: benchmark operands are random, never zeros (zeros run
// faster than real data on some hardware and hide unwritten outputs).
std::vector<float> random_normal_values(std::int64_t count, std::uint64_t seed);

// Makes `weight` the benchmark's N x K weight (random, quantized) unless it already is one: the
// CLI orders problems shape by shape, so each weight is made once, not once per M.
void make_bench_weight(Nvfp4Matrix& weight, std::int64_t n, std::int64_t k);

// CPU: ceilings (streaming read over a buffer several times the L3; OpenBLAS SGEMM 2048^3) and
// the `cpu`-memory backends plus the OpenBLAS peer on the dequantized FP32 weight.
Ceilings measure_cpu_ceilings();
std::vector<Result> bench_cpu(const std::vector<GemmProblem>& problems, const std::vector<std::string>& backends,
                              bool include_peers);

#ifdef FP4GEMM_WITH_CUDA
// GPU: ceilings (device-to-device copy; cuBLAS BF16 8192^3), our CUDA backends and the peers
// cuBLAS BF16 / cuBLASLt FP8, all as CUDA-graph replays with weights rotated past L2; with the peers,
// the stream floor of each weight shape (gpu_stream_floor.hpp).
Ceilings measure_gpu_ceilings(int device);
std::vector<Result> bench_gpu(int device, const std::vector<GemmProblem>& problems,
                              const std::vector<std::string>& backends, bool include_peers);
#endif

}  // namespace fp4gemm::bench
