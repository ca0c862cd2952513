// How the MoE runner treats a backend that computes in GPU memory (cuda_moe's place in the auto
// order), checked on any machine with a stand-in backend of that name: on a simulated GPU with no
// hardware behind it, its canary cannot prove it, so host operands (which a real GPU backend would
// get staged into GPU memory) are served by a host backend and the stand-in is never touched; its
// canary does not run there (and run_all_canaries does not quarantine it).
#include <gtest/gtest.h>

#include <atomic>

#include "dispatch/device_arguments.hpp"
#include "fp4gemm/error.hpp"
#include "fp4gemm/moe/moe_runner.hpp"
#include "moe/cpu_moe_backend.hpp"
#include "moe/moe_test_support.hpp"
#include "moe/ref_moe_backend.hpp"
#include "support/test_support.hpp"

namespace fp4gemm::moe::testing {
namespace {

// Named cuda_moe, computes in GPU memory, and counts every call that would touch the GPU.
class GpuMemoryStandIn final : public MoeBackend {
 public:
  std::string name() const override { return "cuda_moe"; }
  std::string summary() const override { return "test stand-in for a GPU MoE backend"; }
  Memory memory() const override { return Memory::cuda; }
  CheckResult check_device(const DeviceInfo& device) const override {
    return device.is_cuda() ? CheckResult::pass() : CheckResult::fail("needs a CUDA GPU");
  }
  CheckResult check_problem(const MoeProblem&, const DeviceInfo&) const override { return CheckResult::pass(); }
  std::unique_ptr<PreparedMoe> prepare(const MoeWeights&, const DeviceInfo&) override {
    ++calls;
    throw Error(ErrorCode::backend_failure, "the stand-in has no GPU");
  }
  void run(const MoeCall&, const PreparedMoe&, const MutableDenseView&, const RunContext&) override { ++calls; }
  std::atomic<int> calls{0};
};

MoeRunnerOptions simulated_hopper(const std::shared_ptr<GpuMemoryStandIn>& stand_in) {
  MoeRunnerOptions options;
  options.simulated_device = dispatch::simulated_device(90, 130100);
  options.environment = [](const std::string&) -> std::optional<std::string> { return std::nullopt; };
  options.log = [](dispatch::LogLevel, const std::string&) {};
  options.backends = {std::make_shared<RefMoeBackend>(), std::make_shared<CpuMoeBackend>(), stand_in};
  return options;
}

TEST(MoeGpuCandidate, AnUnprovenGpuBackendNeverTouchesHostOperands) {
  const auto stand_in = std::make_shared<GpuMemoryStandIn>();
  MoeRunner runner(simulated_hopper(stand_in));
  MoeCase c;
  const std::uint64_t seed = fp4gemm::testing::fresh_seed();
  std::mt19937_64 rng(seed);
  const MoeInputs inputs = make_moe_inputs(c, rng);
  const MoeExplanation explanation = runner.explain(problem_of(c));
  ASSERT_FALSE(explanation.candidates.empty());
  EXPECT_EQ(explanation.candidates.front().backend, "cuda_moe");  // it leads the SM 9.0 row
  const MoeLayerHandle layer = runner.prepare(inputs.layer.weights);
  PoisonedMoeOutput out = make_poisoned_moe_output(c.tokens, c.layer.hidden, c.output);
  runner.run(inputs.call, layer, out.view);
  EXPECT_EQ(stand_in->calls.load(), 0);
  EXPECT_EQ(layer.prepared_backends(), std::vector<std::string>{"cpu"});
  const std::string failures =
      compare_with_moe_reference(reference_moe(inputs.layer.weights, inputs.call, kAccumulationError), out.view.as_const());
  EXPECT_TRUE(failures.empty()) << "seed " << seed << "\n" << failures;
}

TEST(MoeGpuCandidate, ItsCanaryDoesNotRunOnASimulatedGpuAndDoesNotQuarantineIt) {
  const auto stand_in = std::make_shared<GpuMemoryStandIn>();
  MoeRunner runner(simulated_hopper(stand_in));
  bool reported = false;
  for (const CanaryReport& report : runner.run_all_canaries()) {
    if (report.backend != "cuda_moe") continue;
    reported = true;
    EXPECT_FALSE(report.ran);
    EXPECT_NE(report.reason.find("no GPU behind the simulated device"), std::string::npos) << report.reason;
  }
  EXPECT_TRUE(reported);
  EXPECT_EQ(stand_in->calls.load(), 0);
  EXPECT_EQ(runner.quarantined().count("cuda_moe"), 0u);
}

}  // namespace
}  // namespace fp4gemm::moe::testing
