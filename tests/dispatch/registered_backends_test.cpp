// The backends actually compiled into this build, on simulated devices: every GPU backend's
// checks must decide from the DeviceInfo alone (this machine has no GPU), and the real cublaslt
// backend must give its documented reasons.
#include <gtest/gtest.h>

#include "dispatch/faulty_backends.hpp"
#include "dispatch/device_arguments.hpp"
#include "fp4gemm/error.hpp"
#include "fp4gemm/registry.hpp"
#include "fp4gemm/runner.hpp"

namespace fp4gemm::testing {
namespace {

RunnerOptions compiled_in_on(const DeviceInfo& device) {
  RunnerOptions options;
  options.simulated_device = device;
  options.environment = [](const std::string&) { return std::optional<std::string>(); };
  options.log = [](dispatch::LogLevel, const std::string&) {};
  return options;
}

TEST(RegisteredBackends, ChecksWorkOnEverySimulatedDeviceWithoutAGpu) {
  const GemmProblem problems[] = {{1, 4096, 4096, ActivationType::bf16, DType::bf16},
                                  {1, 4096, 4096, ActivationType::nvfp4, DType::bf16},
                                  {512, 4096, 4096, ActivationType::f32, DType::f32}};
  for (int sm : {80, 89, 90, 100, 103, 120, 121}) {
    for (int cublaslt : {130100, 0, 120600}) {
      Runner runner(compiled_in_on(dispatch::simulated_device(sm, cublaslt)));
      for (const auto& problem : problems) {
        const auto explanation = runner.explain(problem);
        EXPECT_FALSE(explanation.choice.empty()) << sm << " " << problem.to_string() << "\n" << explanation.to_text();
        for (const auto& candidate : explanation.candidates)
          EXPECT_TRUE(candidate.ok || !candidate.reason.empty()) << candidate.backend << " gives no reason";
      }
    }
  }
}

#ifdef FP4GEMM_WITH_CUDA
// `explain` names the chosen backend's kernel: which cuda_nvfp4 kernel, or how dequantize + cuBLAS
// handles the activation type; host backends have one path and print none.
TEST(RegisteredBackends, ExplainNamesTheChosenBackendsKernel) {
  Runner h200(compiled_in_on(dispatch::simulated_device(90, 130100)));
  const auto decode = h200.explain({1, 28672, 8192, ActivationType::bf16, DType::bf16});
  ASSERT_EQ(decode.choice, "cuda_nvfp4");
  EXPECT_EQ(decode.kernel.rfind("mma.sync kernel", 0), 0u) << decode.kernel;
  EXPECT_NE(decode.to_text().find("kernel:   " + decode.kernel), std::string::npos) << decode.to_text();
  const auto cublas = h200.explain({64, 4096, 4096, ActivationType::f32, DType::bf16});
  ASSERT_EQ(cublas.choice, "cuda_dequant_cublas");
  EXPECT_NE(cublas.kernel.find("split exactly into 3 BF16 terms"), std::string::npos) << cublas.kernel;
  Runner cpu(compiled_in_on(dispatch::simulated_device(0, 0)));
  const auto host = cpu.explain({1, 4096, 4096, ActivationType::bf16, DType::bf16});
  EXPECT_TRUE(host.kernel.empty()) << host.choice << ": " << host.kernel;
  EXPECT_EQ(host.to_text().find("kernel:"), std::string::npos);
}

// Above M = 2048, auto keeps dequantize + cuBLAS first on SM 9.0 and cuda_nvfp4 (its prefill
// kernels) second, as the fallback; off SM 9.0 cuda_nvfp4 refuses with the reason, and on SM 9.0
// it refuses weights taller than its prefill grid holds.
const dispatch::CandidateReport* candidate_named(const dispatch::Explanation& explanation, const std::string& name) {
  for (const auto& candidate : explanation.candidates)
    if (candidate.backend == name) return &candidate;
  return nullptr;
}

TEST(RegisteredBackends, CudaNvfp4ServesPrefillOnlyOnSm90AndAfterDequantizeCublas) {
  Runner h200(compiled_in_on(dispatch::simulated_device(90, 130100)));
  const auto prefill = h200.explain({4096, 28672, 8192, ActivationType::bf16, DType::bf16});
  EXPECT_EQ(prefill.choice, "cuda_dequant_cublas") << prefill.to_text();
  const auto* decode = candidate_named(prefill, "cuda_nvfp4");
  ASSERT_NE(decode, nullptr);
  EXPECT_TRUE(decode->ok) << decode->reason;
  const auto tall = h200.explain({512, 9000000, 64, ActivationType::bf16, DType::bf16});
  decode = candidate_named(tall, "cuda_nvfp4");
  ASSERT_NE(decode, nullptr);
  EXPECT_FALSE(decode->ok);
  EXPECT_NE(decode->reason.find("its prefill kernel (M > 64) takes N up to 8388480 rows"), std::string::npos) << decode->reason;
  Runner a100(compiled_in_on(dispatch::simulated_device(80, 130100)));
  const auto ampere = a100.explain({512, 28672, 8192, ActivationType::bf16, DType::bf16});
  decode = candidate_named(ampere, "cuda_nvfp4");
  ASSERT_NE(decode, nullptr);
  EXPECT_FALSE(decode->ok);
  EXPECT_NE(decode->reason.find("serves M <= 64 here (larger M runs its prefill kernel, SM 9.0 only)"), std::string::npos)
      << decode->reason;
}

TEST(RegisteredBackends, CublasLtIsRegisteredAndSaysWhyNotOnHopper) {
  const auto names = backend_names();
  ASSERT_NE(std::find(names.begin(), names.end(), "cublaslt"), names.end());
  Runner runner(compiled_in_on(dispatch::simulated_device(90, 130100)));
  const auto explanation = runner.explain({1, 4096, 4096, ActivationType::nvfp4, DType::bf16});
  bool found = false;
  for (const auto& candidate : explanation.candidates) {
    if (candidate.backend != "cublaslt") continue;
    found = true;
    EXPECT_FALSE(candidate.ok);
    EXPECT_EQ(candidate.reason.rfind("not supported by cuBLASLt on sm_90", 0), 0u) << candidate.reason;
  }
  EXPECT_TRUE(found);
  Runner blackwell(compiled_in_on(dispatch::simulated_device(100, 130100)));
  const auto w4a16 = blackwell.explain({1, 4096, 4096, ActivationType::bf16, DType::bf16});
  for (const auto& candidate : w4a16.candidates)
    if (candidate.backend == "cublaslt") EXPECT_NE(candidate.reason.find("needs nvfp4 activations"), std::string::npos);
  EXPECT_EQ(blackwell.explain({64, 4096, 4096, ActivationType::nvfp4, DType::bf16}).choice, "cublaslt");
}
#endif

TEST(DeviceArguments, AcceptedFormsAndErrors) {
  RunnerOptions options;
  dispatch::apply_device_arguments(options, "cpu", 0, 0);
  EXPECT_EQ(options.device, RunnerOptions::kCpuOnly);
  dispatch::apply_device_arguments(options, "cuda:1", 0, 0);
  EXPECT_EQ(options.device, 1);
  dispatch::apply_device_arguments(options, "2", 0, 0);
  EXPECT_EQ(options.device, 2);
  dispatch::apply_device_arguments(options, "auto", 0, 0);
  EXPECT_EQ(options.device, RunnerOptions::kFirstGpu);
  EXPECT_THROW(dispatch::apply_device_arguments(options, "gpu0", 0, 0), Error);
  EXPECT_THROW(dispatch::apply_device_arguments(options, "auto", 7, 0), Error);
  dispatch::apply_device_arguments(options, "auto", 121, 120900);
  ASSERT_TRUE(options.simulated_device.has_value());
  EXPECT_EQ(options.simulated_device->sm(), 121);
  EXPECT_FALSE(options.simulated_device->probed);
  EXPECT_EQ(options.simulated_device->cublaslt_version, 120900);
  // A CUDA ordinal that does not exist is an error naming how many devices there are.
  RunnerOptions missing;
  missing.device = 7;
  missing.environment = [](const std::string&) { return std::optional<std::string>(); };
  try {
    Runner runner(missing);
    FAIL() << "device 7 accepted";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("CUDA device 7 does not exist"), std::string::npos) << error.what();
  }
}

}  // namespace
}  // namespace fp4gemm::testing
