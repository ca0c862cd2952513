// The two roofline ceilings, measured on the device in the same run as the timings they judge.
#include <algorithm>
#include <cstdio>
#include <vector>

#include "backends/cuda_common/cuda_check.hpp"
#include "backends/cuda_common/device_buffer.hpp"
#include "bench/bench.hpp"
#include "bench/gpu_bench_settings.hpp"
#include "bench/gpu_fill.hpp"
#include "bench/gpu_support.hpp"

namespace fp4gemm::bench {
namespace {

using cuda::check_cuda;

struct Samples {
  double best_us = 0;
  double median_us = 0;
};

// Times `work` (enqueued on `stream`) `trials` times after one untimed warm-up.
template <class Work>
Samples time_trials(cudaStream_t stream, int trials, Work work) {
  cudaEvent_t start = nullptr, stop = nullptr;
  check_cuda(cudaEventCreate(&start), "bench: creating a CUDA event");
  check_cuda(cudaEventCreate(&stop), "bench: creating a CUDA event");
  std::vector<double> samples;
  work();
  for (int trial = 0; trial < trials; ++trial) {
    check_cuda(cudaEventRecord(start, stream), "bench: recording a CUDA event");
    work();
    check_cuda(cudaEventRecord(stop, stream), "bench: recording a CUDA event");
    check_cuda(cudaEventSynchronize(stop), "bench: waiting for a ceiling measurement");
    float milliseconds = 0;
    check_cuda(cudaEventElapsedTime(&milliseconds, start, stop), "bench: reading the CUDA event timer");
    samples.push_back(double(milliseconds) * 1e3);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  std::sort(samples.begin(), samples.end());
  return {samples.front(), samples[samples.size() / 2]};
}

std::string format(const char* pattern, double value) {
  char text[64];
  std::snprintf(text, sizeof text, pattern, value);
  return text;
}

}  // namespace

Ceilings measure_gpu_ceilings(int device) {
  cuda::DeviceGuard guard(device);
  Stream stream;
  Ceilings ceilings;

  {  // Bandwidth: device-to-device copy, bytes read plus bytes written.
    const std::int64_t bytes = gpu_settings::kCopyBytes;
    cuda::DeviceBuffer source(std::size_t(bytes), "the bandwidth ceiling's source"),
        destination(std::size_t(bytes), "the bandwidth ceiling's destination");
    fill_random_bf16(source.as<std::uint16_t>(), bytes / 2, 1, stream.get());
    const Samples copy = time_trials(stream.get(), gpu_settings::kCopyTrials, [&] {
      check_cuda(cudaMemcpyAsync(destination.data(), source.data(), std::size_t(bytes), cudaMemcpyDeviceToDevice, stream.get()),
                 "bench: the device-to-device copy");
    });
    const double traffic = 2.0 * double(bytes);
    ceilings.bandwidth_gbps = traffic / (copy.best_us * 1e-6) / 1e9;
    ceilings.bandwidth_method = "device-to-device copy of " + std::to_string(bytes >> 20) +
                                " MiB, read + write counted, best of " + std::to_string(gpu_settings::kCopyTrials) +
                                format(" (median %.0f GB/s)", traffic / (copy.median_us * 1e-6) / 1e9);
  }

  {  // Compute: cuBLAS BF16 GEMM on random data, FP32 accumulation.
    const std::int64_t size = gpu_settings::kComputeCube, elements = size * size;
    cuda::DeviceBuffer a(std::size_t(elements) * 2, "the compute ceiling's A"), b(std::size_t(elements) * 2, "the compute ceiling's B"),
        c(std::size_t(elements) * 2, "the compute ceiling's C");
    fill_random_bf16(a.as<std::uint16_t>(), elements, 2, stream.get());
    fill_random_bf16(b.as<std::uint16_t>(), elements, 3, stream.get());
    CublasHandle cublas(stream.get());
    const float alpha = 1.0f, beta = 0.0f;
    const int n = int(size);
    const Samples gemm = time_trials(stream.get(), gpu_settings::kComputeTrials, [&] {
      cuda::check_cublas(cublasGemmEx(cublas.get(), CUBLAS_OP_T, CUBLAS_OP_N, n, n, n, &alpha, a.data(), CUDA_R_16BF, n,
                                      b.data(), CUDA_R_16BF, n, &beta, c.data(), CUDA_R_16BF, n, CUBLAS_COMPUTE_32F,
                                      CUBLAS_GEMM_DEFAULT),
                         "bench: the cuBLAS BF16 ceiling GEMM");
    });
    const double flops = 2.0 * double(size) * double(size) * double(size);
    ceilings.compute_tflops = flops / (gemm.best_us * 1e-6) / 1e12;
    ceilings.compute_method = "cuBLAS BF16 GEMM " + std::to_string(size) + "^3, FP32 accumulation, random data, best of " +
                              std::to_string(gpu_settings::kComputeTrials) +
                              format(" (median %.0f TFLOP/s)", flops / (gemm.median_us * 1e-6) / 1e12);
  }
  return ceilings;
}

}  // namespace fp4gemm::bench
