// Which problem the canary runs (src/dispatch/canary_problems.hpp): the ladder and its cost cap,
// the first problem that takes the served problem's kernel, the fallback (reported) when none
// does, and, with CUDA compiled in, cuda_nvfp4's kernels on simulated GPUs. Host only.
#include <gtest/gtest.h>

#include <cstdlib>

#include "dispatch/canary_problems.hpp"
#include "dispatch/faulty_backends.hpp"
#include "dispatch/runner_state.hpp"
#include "dispatch/device_arguments.hpp"
#ifdef FP4GEMM_WITH_CUDA
#include "backends/cuda_nvfp4/kernel_switch.hpp"
#include "backends/cuda_nvfp4/cuda_nvfp4_backend.hpp"
#endif

namespace fp4gemm::testing {
namespace {

using dispatch::canary_candidates;
using dispatch::choose_canary_problem;

GemmProblem shape(std::int64_t m, std::int64_t n, std::int64_t k) { return {m, n, k, ActivationType::nvfp4, DType::bf16}; }

// A host backend (it computes through `ref`) with a "huge" kernel that only problems of M > 16 on
// weights of at least 2^24 elements take: within the canary's cost cap (2^29 multiply-adds) only
// for M up to 32, so a served problem of M = 32 on such a weight has none that reaches it.
StandInBackend huge_kernel_backend() {
  const auto accept_device = [](const DeviceInfo&) { return CheckResult::pass(); };
  const auto accept_problem = [](const GemmProblem&, const DeviceInfo&) { return CheckResult::pass(); };
  return StandInBackend("huge_kernel", Memory::host, accept_device, accept_problem, [](const GemmProblem& problem) {
    return problem.m > 16 && problem.n * problem.k >= (std::int64_t(1) << 24) ? "huge" : "small";
  });
}

TEST(CanaryProblems, TheLadderKeepsItsOrderCapsMAndLeavesOutProblemsAboveTheCostCap) {
  // M = 48 on 8192x8192: 48x8192x8192 (2^31.6 multiply-adds) is above the cap and left out; the
  // last resort 16x8192x8192 (2^30) is kept as before per-kernel canaries.
  EXPECT_EQ(canary_candidates(shape(48, 8192, 8192)),
            (std::vector<GemmProblem>{shape(16, 64, 256), shape(1, 64, 256), shape(48, 64, 256), shape(48, 8192, 256),
                                      shape(48, 64, 8192), shape(16, 8192, 8192), shape(256, 64, 256), shape(256, 11904, 128)}));
  // M is capped at 256 and no problem appears twice; the doctor's kernel probes come last.
  EXPECT_EQ(canary_candidates(shape(4096, 64, 256)),
            (std::vector<GemmProblem>{shape(16, 64, 256), shape(1, 64, 256), shape(256, 64, 256), shape(48, 8192, 256),
                                      shape(256, 11904, 128)}));
  EXPECT_EQ(canary_candidates(shape(1, 64, 256)),
            (std::vector<GemmProblem>{shape(16, 64, 256), shape(1, 64, 256), shape(48, 8192, 256), shape(256, 64, 256),
                                      shape(256, 11904, 128)}));
}

TEST(CanaryProblems, AKernelNoProblemWithinTheCostCapTakesIsCanariedThroughAnotherAndTheReportSaysSo) {
  StandInBackend backend = huge_kernel_backend();
  const DeviceInfo cpu = probe_cpu();
  const GemmProblem served{32, 8192, 8192, ActivationType::bf16, DType::f32};
  const dispatch::CanaryChoice choice = choose_canary_problem(backend, cpu, served);
  EXPECT_EQ(choice.kernel, "huge");
  EXPECT_FALSE(choice.reaches_kernel);
  ASSERT_TRUE(choice.problem.has_value());
  EXPECT_EQ(*choice.problem, (GemmProblem{16, 64, 256, ActivationType::bf16, DType::f32}));
  EXPECT_EQ(choice.problem_kernel, "small");

  const CanaryReport report = dispatch::run_canary(backend, cpu, 0, served);
  EXPECT_TRUE(report.passed) << report.reason;
  EXPECT_EQ(report.kernel, "small");
  EXPECT_NE(report.coverage_gap.find("no canary problem within the cost cap takes the huge kernel"), std::string::npos)
      << report.coverage_gap;
  EXPECT_NE(report.coverage_gap.find("so the canary ran the small kernel instead"), std::string::npos) << report.coverage_gap;

  // Where a problem within the cap takes the huge kernel (M = 17 on 4096x4096), it is chosen.
  const GemmProblem within{17, 4096, 4096, ActivationType::bf16, DType::f32};
  const dispatch::CanaryChoice reached = choose_canary_problem(backend, cpu, within);
  EXPECT_TRUE(reached.reaches_kernel);
  EXPECT_EQ(reached.problem_kernel, "huge");
  EXPECT_EQ(*reached.problem, within);
}

TEST(CanaryProblems, ABackendThatAcceptsNoCandidateSaysWhy) {
  auto backend = cuda_nvfp4_stand_in();  // refuses FP32 activations
  const dispatch::CanaryChoice choice =
      choose_canary_problem(*backend, simulated_gpu(9, 0), {4, 4096, 4096, ActivationType::f32, DType::f32});
  EXPECT_FALSE(choice.problem.has_value());
  EXPECT_EQ(choice.rejection, "takes BF16 or NVFP4 activations");
}

#ifdef FP4GEMM_WITH_CUDA
// cuda_nvfp4 names the kernel choose_decode_kernel picks; the canary reaches each one with a
// problem of its own. Simulated GPUs: nothing here touches a GPU.
TEST(CanaryProblems, CudaNvfp4NamesEachKernelAndTheCanaryReachesIt) {
  unsetenv("FP4GEMM_DECODE_KERNEL");
  const CudaNvfp4Backend backend;
  const DeviceInfo h200 = dispatch::simulated_device(90, 130100);
  const DeviceInfo a100 = dispatch::simulated_device(80, 130100);
  const auto bf16 = [](std::int64_t m, std::int64_t n, std::int64_t k) {
    return GemmProblem{m, n, k, ActivationType::bf16, DType::bf16};
  };
  EXPECT_EQ(backend.kernel_name(bf16(16, 64, 256), h200), "mma.sync");
  EXPECT_EQ(backend.kernel_name(bf16(48, 8192, 256), h200), "wgmma");
  EXPECT_EQ(backend.kernel_name(bf16(256, 64, 256), h200), "prefill");
  EXPECT_EQ(backend.kernel_name(bf16(256, 64, 256), a100), "mma.sync");

  // Each served problem's kernel, and the canary problem that reaches it:
  // - M = 48 on 8192 rows takes wgmma; 48x64x256 takes mma.sync, so 48x8192x256 is chosen;
  // - M = 20 on 28672x8192 takes wgmma by the tall-weight rule (K >= 2048), which no ladder problem
  //   within the cost cap meets; the doctor's wgmma probe reaches it.
  const struct {
    GemmProblem served;
    const char* kernel;
    GemmProblem canary;
  } cases[] = {{bf16(48, 8192, 8192), "wgmma", bf16(48, 8192, 256)},
               {bf16(20, 28672, 8192), "wgmma", bf16(48, 8192, 256)},
               {bf16(512, 28672, 8192), "wide prefill", bf16(256, 11904, 128)},
               {bf16(512, 4096, 4096), "prefill", bf16(256, 64, 256)},
               {bf16(1, 28672, 8192), "mma.sync", bf16(16, 64, 256)}};
  for (const auto& c : cases) {
    const dispatch::CanaryChoice choice = choose_canary_problem(backend, h200, c.served);
    EXPECT_EQ(choice.kernel, c.kernel) << c.served.to_string();
    EXPECT_TRUE(choice.reaches_kernel) << c.served.to_string();
    ASSERT_TRUE(choice.problem.has_value()) << c.served.to_string();
    EXPECT_EQ(*choice.problem, c.canary) << c.served.to_string();
  }

  // The doctor probes one problem per kernel: four on the H200, one on the A100.
  const auto targets = [&](const DeviceInfo& device) {
    std::vector<std::string> kernels;
    for (const GemmProblem& target : dispatch::doctor_canary_targets(backend, device, {ActivationType::bf16}, DType::f32))
      kernels.push_back(backend.kernel_name(target, device));
    return kernels;
  };
  EXPECT_EQ(targets(h200), (std::vector<std::string>{"mma.sync", "wgmma", "prefill", "wide prefill"}));
  EXPECT_EQ(targets(a100), std::vector<std::string>{"mma.sync"});

  // A malformed knob gives no name (kernel_plan and run report it), never an exception here.
  setenv("FP4GEMM_DECODE_KERNEL", "tensor", 1);
  EXPECT_EQ(backend.kernel_name(bf16(16, 64, 256), h200), "");
  unsetenv("FP4GEMM_DECODE_KERNEL");
}
#endif

}  // namespace
}  // namespace fp4gemm::testing
