#pragma once
// The fixture of cuda_nvfp4's SM 9.0 kernel tests (wgmma small-M and prefill): an SM 9.0 GPU, the
// backend and a stream, and one case checked against the CPU `ref` oracle on fresh random operands.
#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <string>

#include "fp4gemm/registry.hpp"
#include "gpu/gpu_test_support.hpp"

namespace fp4gemm::testing {

inline constexpr double kRelativeTolerance = 1e-4;  // as in cuda_backend_correctness_test.cpp

// Every test needs an SM 9.0 GPU (the kernel is sm_90a only), the backend and a stream.
class CudaNvfp4Sm90 : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto gpu = first_gpu();
    if (!gpu) GTEST_SKIP() << "needs an SM 9.0 GPU: " << cuda_unavailable_reason();
    if (gpu->sm() != 90) GTEST_SKIP() << "needs an SM 9.0 GPU, not " << gpu->to_string();
    gpu_ = *gpu;
    backend_ = make_backend("cuda_nvfp4");
    stream_ = std::make_unique<TestStream>();
  }

  // One case on fresh random operands; activation and output rows `*_stride` elements apart (0:
  // packed). Returns the failures, empty when every element matches and nothing else was written.
  std::string check(const GemmCase& c, std::int64_t activation_stride = 0, std::int64_t output_stride = 0) {
    const std::uint64_t seed = fresh_seed();
    std::mt19937_64 rng(seed);
    const GemmOperands operands = make_operands(c, rng);
    const auto prepared = backend_->prepare(operands.weight.view(), gpu_);
    const DeviceActivation activation = upload_activation(operands, gpu_.index, activation_stride);
    DeviceOutput out(c.m, c.n, c.output, gpu_.index, output_stride);
    backend_->run(activation.view, *prepared, operands.alpha, out.view(), {stream_->get()});
    stream_->synchronize();
    out.download();
    std::string failures = compare_with_reference(operands, out.values(), c.m, c.n, c.output, kRelativeTolerance);
    if (!out.only_elements_written()) failures += "wrote outside the output\n";
    return failures.empty() ? "" : c.to_string() + " seed " + std::to_string(seed) + "\n" + failures;
  }

  DeviceInfo gpu_;
  std::unique_ptr<Backend> backend_;
  std::unique_ptr<TestStream> stream_;
};

}  // namespace fp4gemm::testing
