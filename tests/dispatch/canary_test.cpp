// The canary quarantines backends that return zeros, NaN, half an output, or throw, before they
// serve; `explain` shows the reason and the caller still gets a correct result from the next one.
// A backend with several kernels has each kernel proven, and quarantined, on its own.
#include <gtest/gtest.h>

#include "backends/cpu/cpu_backend.hpp"
#include "backends/ref/ref_backend.hpp"
#include "dispatch/faulty_backends.hpp"
#include "fp4gemm/runner.hpp"
#include "support/test_support.hpp"

namespace fp4gemm::testing {
namespace {

struct Broken {
  Fault fault;
  std::string reason;  // a phrase the quarantine reason must contain
};

const Broken kBroken[] = {
    {Fault::zeros, "returned all zeros"},
    {Fault::nan, "returned NaN or Inf"},
    {Fault::throw_in_run, "threw: "},
    {Fault::half_output, "unwritten"},
};

RunnerOptions options_with(std::shared_ptr<Backend> first, std::vector<std::string>* warnings) {
  RunnerOptions options;
  options.simulated_device = simulated_gpu(12, 0);
  options.environment = [](const std::string&) { return std::optional<std::string>(); };
  options.log = [warnings](dispatch::LogLevel, const std::string& message) { warnings->push_back(message); };
  options.backends = {first, std::make_shared<RefBackend>()};
  options.auto_order = {first->name(), "ref"};
  return options;
}

TEST(Canary, BrokenBackendsAreQuarantinedBeforeTheyServe) {
  for (const Broken& broken : kBroken) {
    for (ActivationType activation : {ActivationType::bf16, ActivationType::nvfp4, ActivationType::f32}) {
      std::vector<std::string> warnings;
      auto backend = std::make_shared<FaultyBackend>("broken", broken.fault);
      Runner runner(options_with(backend, &warnings));
      const GemmCase c{3, 40, 96, activation, DType::bf16};
      const std::string what = broken.reason + " " + c.to_string();
      std::mt19937_64 rng(fresh_seed());
      const GemmOperands operands = make_operands(c, rng);
      const WeightHandle weight = runner.prepare(operands.weight.view());
      PoisonedOutput out = make_poisoned_output(c.m, c.n, c.output);
      runner.gemm(operands.activation(), weight, operands.alpha, out.view);
      EXPECT_EQ(compare_with_reference(operands, read_output(out), c.m, c.n, c.output, 1e-5), "") << what;

      const auto quarantined = runner.quarantined();
      ASSERT_EQ(quarantined.count("broken"), 1u) << what;
      EXPECT_NE(quarantined.at("broken").find(broken.reason), std::string::npos) << what << ": " << quarantined.at("broken");
      EXPECT_NE(quarantined.at("broken").find("seed"), std::string::npos) << "the reason names the seed to replay it";
      EXPECT_EQ(weight.prepared_backends(), std::vector<std::string>{"ref"}) << what << ": broken never served";
      ASSERT_EQ(warnings.size(), 1u) << what;
      EXPECT_NE(warnings.front().find("quarantined"), std::string::npos) << warnings.front();

      const auto explanation = runner.explain({c.m, c.n, c.k, c.activation, c.output});
      EXPECT_EQ(explanation.choice, "ref");
      const std::string& reason = explanation.candidates.front().reason;
      EXPECT_EQ(reason.rfind("quarantined: its canary failed: ", 0), 0u) << reason;
      EXPECT_NE(reason.find(broken.reason), std::string::npos) << reason;
      EXPECT_NE(explanation.to_text().find("quarantined"), std::string::npos);
    }
  }
}

TEST(Canary, HealthyBackendsPassAndRunTheirCanaryOncePerOperandTypes) {
  std::vector<std::string> warnings;
  auto healthy = std::make_shared<FaultyBackend>("healthy", Fault::none);
  Runner runner(options_with(healthy, &warnings));
  std::mt19937_64 rng(fresh_seed());
  for (int call = 0; call < 3; ++call) {
    const GemmCase c{2 + call, 32, 64, ActivationType::bf16, DType::f32};
    const GemmOperands operands = make_operands(c, rng);
    PoisonedOutput out = make_poisoned_output(c.m, c.n, c.output);
    runner.gemm(operands.activation(), runner.prepare(operands.weight.view()), operands.alpha, out.view);
    EXPECT_EQ(compare_with_reference(operands, read_output(out), c.m, c.n, c.output, 1e-5), "");
  }
  EXPECT_TRUE(runner.quarantined().empty());
  EXPECT_TRUE(warnings.empty());
  EXPECT_EQ(healthy->runs, 1 + 3) << "one canary, then three served calls";
}

// Serves one random problem of M rows through `runner`; "" when the output matches `ref`. The
// backends that prepared the weight (those that served it) go to `served_by`.
std::string serve_and_compare(Runner& runner, std::int64_t m, std::vector<std::string>& served_by) {
  const GemmCase c{m, 40, 96, ActivationType::bf16, DType::f32};
  std::mt19937_64 rng(fresh_seed());
  const GemmOperands operands = make_operands(c, rng);
  const WeightHandle weight = runner.prepare(operands.weight.view());
  PoisonedOutput out = make_poisoned_output(c.m, c.n, c.output);
  runner.gemm(operands.activation(), weight, operands.alpha, out.view);
  served_by = weight.prepared_backends();
  return compare_with_reference(operands, read_output(out), c.m, c.n, c.output, 1e-5);
}

// A backend's kernels are proven one by one: a wrong large-M kernel is quarantined under its own
// key before it serves, and the backend's correct small-M kernel keeps serving.
TEST(Canary, AWrongKernelIsQuarantinedAloneAndTheBackendsOtherKernelKeepsServing) {
  std::vector<std::string> warnings;
  auto backend = std::make_shared<TwoKernelBackend>("two_kernels", Fault::zeros);
  Runner runner(options_with(backend, &warnings));
  std::vector<std::string> served_by;

  // M = 4 takes the small kernel: its canary (1x64x256: 16x64x256 would take the large one) passes.
  EXPECT_EQ(serve_and_compare(runner, 4, served_by), "");
  EXPECT_EQ(served_by, std::vector<std::string>{"two_kernels"});
  EXPECT_EQ(backend->small_runs(), 1 + 1) << "the small kernel's canary, then the call";
  EXPECT_EQ(backend->large_runs(), 0) << "the large kernel is not canaried before a problem takes it";
  EXPECT_TRUE(runner.quarantined().empty());

  // M = 40 takes the large kernel: its canary fails, only that kernel is quarantined, ref serves.
  EXPECT_EQ(serve_and_compare(runner, 40, served_by), "");
  EXPECT_EQ(served_by, std::vector<std::string>{"ref"});
  EXPECT_EQ(backend->large_runs(), 1) << "its canary only: the large kernel never served";
  const auto quarantined = runner.quarantined();
  ASSERT_EQ(quarantined.size(), 1u);
  ASSERT_EQ(quarantined.count("two_kernels (large kernel)"), 1u);
  const std::string& reason = quarantined.at("two_kernels (large kernel)");
  EXPECT_NE(reason.find("returned all zeros"), std::string::npos) << reason;
  EXPECT_NE(reason.find("(large kernel, seed "), std::string::npos) << reason;
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings.front().find("'two_kernels (large kernel)' is quarantined"), std::string::npos) << warnings.front();

  // M = 4 is still served by the small kernel, without a second canary.
  const int small_runs = backend->small_runs();
  EXPECT_EQ(serve_and_compare(runner, 4, served_by), "");
  EXPECT_EQ(served_by, std::vector<std::string>{"two_kernels"});
  EXPECT_EQ(backend->small_runs(), small_runs + 1);

  // explain: quarantined for a problem that takes the large kernel, the choice for the small one.
  const auto large = runner.explain({40, 40, 96, ActivationType::bf16, DType::f32});
  EXPECT_EQ(large.choice, "ref");
  ASSERT_EQ(large.candidates.front().backend, "two_kernels");
  EXPECT_EQ(large.candidates.front().reason.rfind("quarantined: its canary failed: returned all zeros", 0), 0u)
      << large.candidates.front().reason;
  const auto small = runner.explain({4, 40, 96, ActivationType::bf16, DType::f32});
  EXPECT_EQ(small.choice, "two_kernels") << small.to_text();
}

// The doctor runs one canary per kernel of a backend (one for a backend with one path) and
// quarantines only the kernel that fails.
TEST(Canary, DoctorRunsOneCanaryPerKernel) {
  std::vector<std::string> warnings;
  auto backend = std::make_shared<TwoKernelBackend>("two_kernels", Fault::nan);
  Runner runner(options_with(backend, &warnings));
  const std::vector<CanaryReport> reports = runner.run_all_canaries();
  ASSERT_EQ(reports.size(), 3u);
  EXPECT_EQ(reports[0].backend, "two_kernels");
  EXPECT_EQ(reports[0].kernel, "large");  // 16x64x256, the doctor's first problem, takes it
  EXPECT_TRUE(reports[0].ran);
  EXPECT_FALSE(reports[0].passed);
  EXPECT_NE(reports[0].reason.find("returned NaN or Inf"), std::string::npos) << reports[0].reason;
  EXPECT_EQ(reports[1].backend, "two_kernels");
  EXPECT_EQ(reports[1].kernel, "small");
  EXPECT_TRUE(reports[1].passed) << reports[1].reason;
  EXPECT_EQ(reports[1].problem, (GemmProblem{1, 64, 256, ActivationType::bf16, DType::f32}.to_string()));
  EXPECT_EQ(reports[2].backend, "ref");
  EXPECT_EQ(reports[2].kernel, "");
  EXPECT_TRUE(reports[2].passed) << reports[2].reason;
  for (const auto& report : reports) EXPECT_EQ(report.coverage_gap, "") << report.backend;
  const auto quarantined = runner.quarantined();
  ASSERT_EQ(quarantined.size(), 1u);
  EXPECT_EQ(quarantined.begin()->first, "two_kernels (large kernel)");
  EXPECT_EQ(backend->large_runs(), 1);
  EXPECT_EQ(backend->small_runs(), 1);
}

TEST(Canary, DoctorRunsEveryBackendsCanary) {
  std::vector<std::string> warnings;
  RunnerOptions options;
  options.simulated_device = simulated_gpu(9, 0);
  options.environment = [](const std::string&) { return std::optional<std::string>(); };
  options.log = [&warnings](dispatch::LogLevel, const std::string& message) { warnings.push_back(message); };
  options.backends = {std::make_shared<RefBackend>(), std::make_shared<CpuBackend>(),
                      std::make_shared<FaultyBackend>("returns_zeros", Fault::zeros),
                      std::make_shared<FaultyBackend>("returns_nan", Fault::nan),
                      std::make_shared<FaultyBackend>("throws", Fault::throw_in_run),
                      std::make_shared<FaultyBackend>("writes_half", Fault::half_output)};
  Runner runner(std::move(options));
  std::map<std::string, CanaryReport> reports;
  for (const auto& report : runner.run_all_canaries()) reports[report.backend] = report;
  ASSERT_EQ(reports.size(), 6u);
  EXPECT_TRUE(reports["ref"].passed) << reports["ref"].reason;
  EXPECT_TRUE(reports["cpu"].passed) << reports["cpu"].reason;
  for (const char* name : {"returns_zeros", "returns_nan", "throws", "writes_half"}) {
    EXPECT_TRUE(reports[name].ran) << name;
    EXPECT_FALSE(reports[name].passed) << name;
    EXPECT_EQ(reports[name].kernel, "") << name << " has one path";
  }
  EXPECT_NE(reports["returns_zeros"].reason.find("all zeros"), std::string::npos);
  EXPECT_NE(reports["writes_half"].reason.find("unwritten"), std::string::npos);
  EXPECT_EQ(runner.quarantined().size(), 4u);
}

// A simulated GPU (`doctor --simulate-sm`) has no hardware: a backend computing in GPU memory is
// reported as unable to run there, naming the canary it would run, and is not quarantined.
TEST(Canary, AGpuBackendOnASimulatedGpuCannotRunAndIsNotQuarantined) {
  RunnerOptions options;
  options.simulated_device = simulated_gpu(9, 0);
  options.environment = [](const std::string&) { return std::optional<std::string>(); };
  options.log = [](dispatch::LogLevel, const std::string&) {};
  options.backends = {std::make_shared<FaultyBackend>("gpu_only", Fault::throw_in_run, Memory::cuda), std::make_shared<RefBackend>()};
  Runner runner(std::move(options));
  const std::vector<CanaryReport> reports = runner.run_all_canaries();
  ASSERT_EQ(reports.size(), 2u);
  EXPECT_EQ(reports[0].backend, "gpu_only");
  EXPECT_FALSE(reports[0].ran);
  EXPECT_FALSE(reports[0].passed);
  EXPECT_NE(reports[0].reason.find("no GPU behind the simulated device"), std::string::npos) << reports[0].reason;
  EXPECT_NE(reports[0].reason.find("its canary would be m="), std::string::npos) << reports[0].reason;
  EXPECT_TRUE(reports[1].passed) << reports[1].reason;
  EXPECT_TRUE(runner.quarantined().empty());
}

}  // namespace
}  // namespace fp4gemm::testing
