// The runner on a real GPU: auto on the real device, canaries of the CUDA backends through
// staging, and a failing GPU backend falling back to a host backend with operands in GPU memory.
// Skips (with the reason) on machines without a GPU; the lead runs it on the H200.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>

#include "backends/ref/ref_backend.hpp"
#include "dispatch/faulty_backends.hpp"
#include "dispatch/staging.hpp"
#include "fp4gemm/registry.hpp"
#include "fp4gemm/runner.hpp"
#include "support/test_support.hpp"

namespace fp4gemm::testing {
namespace {

class GpuRunner : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto gpus = probe_cuda_devices();
    if (gpus.empty()) GTEST_SKIP() << "no CUDA device: " << cuda_unavailable_reason();
    gpu = gpus.front();
  }
  RunnerOptions options() {
    RunnerOptions options;
    options.device = gpu.index;
    options.environment = [](const std::string&) { return std::optional<std::string>(); };
    options.log = [this](dispatch::LogLevel, const std::string& message) { warnings.push_back(message); };
    return options;
  }
  // Runs `c` with activation and output in GPU memory; returns the comparison with ref.
  std::string run_on_device_memory(Runner& runner, const GemmCase& c) {
    std::mt19937_64 rng(fresh_seed());
    const GemmOperands operands = make_operands(c, rng);
    const WeightHandle weight = runner.prepare(operands.weight.view());
    const std::size_t activation_bytes = std::size_t(c.m * c.k) * 2;
    dispatch::StagingBuffer activation(Memory::cuda, activation_bytes, gpu.index);
    dispatch::copy_rows(activation.data(), activation_bytes, Memory::cuda, operands.activation_bf16.data(), activation_bytes,
                        Memory::host, activation_bytes, 1, gpu.index, nullptr);
    const std::size_t out_bytes = std::size_t(c.m * c.n) * dtype_size(c.output);
    dispatch::StagingBuffer out(Memory::cuda, out_bytes, gpu.index);
    runner.gemm(ActivationView::from_dense({activation.data(), DType::bf16, c.m, c.k, 0, Memory::cuda, gpu.index}), weight,
                operands.alpha, {out.data(), c.output, c.m, c.n, 0, Memory::cuda, gpu.index});
    PoisonedOutput host_out = make_poisoned_output(c.m, c.n, c.output);
    dispatch::copy_rows(host_out.bytes.data(), out_bytes, Memory::host, out.data(), out_bytes, Memory::cuda, out_bytes, 1,
                        gpu.index, nullptr);
    return compare_with_reference(operands, read_output(host_out), c.m, c.n, c.output, 1e-5);
  }
  DeviceInfo gpu;
  std::vector<std::string> warnings;
};

TEST_F(GpuRunner, AutoServesDeviceOperandsCorrectly) {
  Runner runner(options());
  for (std::int64_t m : {1, 16, 200}) {
    const GemmCase c{m, 256, 512, ActivationType::bf16, DType::f32};
    EXPECT_EQ(run_on_device_memory(runner, c), "") << c.to_string() << "\n"
                                                   << runner.explain({m, 256, 512, c.activation, c.output}).to_text();
  }
  EXPECT_TRUE(runner.quarantined().empty());
}

// The host time of one Runner::gemm call at M = 1 (4096x4096, BF16 in GPU memory), launches
// included, over 2000 calls issued back to back: the C++ side of the Python op's added cost
// (tests/python/test_cuda.py prints the op's). The bound catches a per-call synchronisation or
// allocation, which would cost tens of microseconds.
TEST_F(GpuRunner, HostCostPerCallAtMOne) {
  Runner runner(options());
  std::mt19937_64 rng(fresh_seed());
  const GemmCase c{1, 4096, 4096, ActivationType::bf16, DType::bf16};
  const GemmOperands operands = make_operands(c, rng);
  const WeightHandle weight = runner.prepare(operands.weight.view());
  dispatch::StagingBuffer activation(Memory::cuda, std::size_t(c.k) * 2, gpu.index);
  dispatch::StagingBuffer out(Memory::cuda, std::size_t(c.n) * 2, gpu.index);
  const ActivationView a = ActivationView::from_dense({activation.data(), DType::bf16, 1, c.k, 0, Memory::cuda, gpu.index});
  const MutableDenseView o{out.data(), DType::bf16, 1, c.n, 0, Memory::cuda, gpu.index};
  std::uint16_t first = 0;
  // Copying the output back waits for the calls before it (the default stream).
  const auto wait_for_the_calls = [&] {
    dispatch::copy_rows(&first, 2, Memory::host, out.data(), 2, Memory::cuda, 2, 1, gpu.index, nullptr);
  };
  for (int i = 0; i < 20; ++i) runner.gemm(a, weight, 1.0f, o);
  wait_for_the_calls();
  constexpr int kCalls = 2000;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kCalls; ++i) runner.gemm(a, weight, 1.0f, o);
  const double host_us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() / kCalls;
  wait_for_the_calls();
  std::printf("C++ path, 4096x4096 M = 1: %.2f us of host time per call (launch included), served by %s\n", host_us,
              runner.explain({1, c.n, c.k, c.activation, c.output}).choice.c_str());
  EXPECT_LT(host_us, 50.0);
}

TEST_F(GpuRunner, EveryCudaBackendPassesItsCanary) {
  Runner runner(options());
  std::vector<std::string> decode_kernels;
  for (const auto& report : runner.run_all_canaries()) {
    if (report.ran) EXPECT_TRUE(report.passed) << quarantine_key(report.backend, report.kernel) << ": " << report.reason;
    if (report.backend == "cuda_nvfp4") decode_kernels.push_back(report.kernel);
  }
  // On SM 9.0 each of cuda_nvfp4's kernels is proven by a canary of its own.
  const auto names = backend_names();
  if (gpu.sm() == 90 && std::find(names.begin(), names.end(), "cuda_nvfp4") != names.end()) {
    EXPECT_EQ(decode_kernels, (std::vector<std::string>{"mma.sync", "wgmma", "prefill"}));
  }
}

TEST_F(GpuRunner, CublasLtSaysWhyNotOnThisGpu) {
  const auto names = backend_names();
  if (std::find(names.begin(), names.end(), "cublaslt") == names.end()) GTEST_SKIP() << "cublaslt not compiled in";
  Runner runner(options());
  const auto explanation = runner.explain({64, 4096, 4096, ActivationType::nvfp4, DType::bf16});
  for (const auto& candidate : explanation.candidates) {
    if (candidate.backend != "cublaslt") continue;
    if (gpu.sm() == 90) {
      EXPECT_FALSE(candidate.ok);
      EXPECT_EQ(candidate.reason.rfind("not supported by cuBLASLt on sm_90", 0), 0u) << candidate.reason;
      EXPECT_NE(candidate.reason.find("CUBLAS_STATUS_NOT_SUPPORTED"), std::string::npos) << candidate.reason;
    }
    std::printf("cublaslt on %s: %s\n", gpu.to_string().c_str(), candidate.ok ? "ok" : candidate.reason.c_str());
  }
}

TEST_F(GpuRunner, FailingGpuBackendFallsBackToTheHostThroughStaging) {
  RunnerOptions staged = options();
  staged.backends = {std::make_shared<FaultyBackend>("gpu_broken", Fault::throw_in_run, Memory::cuda),
                     std::make_shared<RefBackend>()};
  staged.auto_order = {"gpu_broken", "ref"};
  staged.canary = false;
  Runner runner(std::move(staged));
  for (DType output : {DType::f32, DType::bf16}) {
    const GemmCase c{3, 96, 128, ActivationType::bf16, output};
    EXPECT_EQ(run_on_device_memory(runner, c), "") << c.to_string();
  }
  ASSERT_FALSE(warnings.empty());
  EXPECT_NE(warnings.front().find("backend 'gpu_broken' failed"), std::string::npos) << warnings.front();
}

}  // namespace
}  // namespace fp4gemm::testing
