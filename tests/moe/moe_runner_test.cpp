// The MoE runner: the backend setting (argument > FP4GEMM_MOE_BACKEND > auto), explain, fallback
// when a backend throws, quarantine when its canary returns wrong numbers, resident bytes.
#include <gtest/gtest.h>

#include <algorithm>

#include "dispatch/log.hpp"
#include "fp4gemm/error.hpp"
#include "fp4gemm/moe/moe_runner.hpp"
#include "moe/faulty_moe_backends.hpp"
#include "moe/moe_test_support.hpp"
#include "support/test_support.hpp"

namespace fp4gemm::moe::testing {
namespace {

class MoeRunnerTest : public ::testing::Test {
 protected:
  MoeRunnerOptions options(const std::string& backend = "", const std::string& environment_value = "") {
    MoeRunnerOptions result;
    result.backend = backend;
    result.device = RunnerOptions::kCpuOnly;
    result.environment = [environment_value](const std::string& name) -> std::optional<std::string> {
      if (name == "FP4GEMM_MOE_BACKEND" && !environment_value.empty()) return environment_value;
      return std::nullopt;
    };
    result.log = [this](dispatch::LogLevel, const std::string& message) { warnings.push_back(message); };
    return result;
  }

  // Runs a fresh random case through the runner and checks every element against the oracle.
  void expect_correct(MoeRunner& runner, const MoeCase& c) {
    const std::uint64_t seed = fp4gemm::testing::fresh_seed();
    std::mt19937_64 rng(seed);
    const MoeInputs inputs = make_moe_inputs(c, rng);
    const MoeLayerHandle layer = runner.prepare(inputs.layer.weights);
    PoisonedMoeOutput out = make_poisoned_moe_output(c.tokens, c.layer.hidden, c.output);
    runner.run(inputs.call, layer, out.view);
    const std::string failures =
        compare_with_moe_reference(reference_moe(inputs.layer.weights, inputs.call, kAccumulationError), out.view.as_const());
    EXPECT_TRUE(failures.empty()) << c.to_string() << " seed " << seed << "\n" << failures;
  }

  int warnings_containing(const std::string& phrase) const {
    int count = 0;
    for (const auto& warning : warnings) count += warning.find(phrase) != std::string::npos;
    return count;
  }

  MoeProblem problem() const { return problem_of(c); }

  std::vector<std::string> warnings;
  MoeCase c;
};

TEST_F(MoeRunnerTest, AutoPicksCpuOnTheHostAndExplainsWhy) {
  MoeRunner runner(options());
  const MoeExplanation explanation = runner.explain(problem());
  EXPECT_EQ(explanation.choice, "cpu");
  EXPECT_EQ(explanation.setting, "auto");
  ASSERT_GE(explanation.candidates.size(), 2u);
  EXPECT_EQ(explanation.candidates[0].backend, "cpu");
  EXPECT_TRUE(explanation.candidates[0].ok);
  EXPECT_EQ(explanation.candidates[1].backend, "ref");
  const std::string text = explanation.to_text();
  EXPECT_NE(text.find("choice:   cpu — first candidate of the MoE auto order"), std::string::npos) << text;
  EXPECT_NE(text.find("plan:     tokens grouped by expert"), std::string::npos) << text;
  EXPECT_NE(text.find("order:    "), std::string::npos) << text;
  expect_correct(runner, c);
}

TEST_F(MoeRunnerTest, ExplicitBackendWinsOverTheEnvironment) {
  // The warning is about the process's configuration: once per process.
  const std::string warning_key = "override:FP4GEMM_MOE_BACKEND=cpu:ref";
  const bool already_reported = dispatch::process_once_log().seen(warning_key);
  MoeRunner runner(options("ref", "cpu"));
  const MoeExplanation explanation = runner.explain(problem());
  EXPECT_EQ(explanation.choice, "ref");
  EXPECT_EQ(explanation.candidates.front().origin, "requested");
  EXPECT_EQ(warnings_containing("wins over FP4GEMM_MOE_BACKEND=cpu"), already_reported ? 0 : 1);
  EXPECT_TRUE(dispatch::process_once_log().seen(warning_key));
  expect_correct(runner, c);
}

TEST_F(MoeRunnerTest, EnvironmentVariableChoosesTheBackend) {
  MoeRunner runner(options("", "ref"));
  const MoeExplanation explanation = runner.explain(problem());
  EXPECT_EQ(explanation.choice, "ref");
  EXPECT_EQ(explanation.setting_origin, "FP4GEMM_MOE_BACKEND");
  expect_correct(runner, c);
}

TEST_F(MoeRunnerTest, UnknownBackendIsAnErrorListingTheValidNames) {
  try {
    MoeRunner runner(options("no_such_moe_backend"));
    FAIL() << "accepted an unknown MoE backend";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("valid names: auto, ref, cpu"), std::string::npos) << error.what();
  }
}

TEST_F(MoeRunnerTest, AThrowingBackendFallsBackToTheNextCandidateAndWarnsOnce) {
  for (MoeFault fault : {MoeFault::throw_in_run, MoeFault::throw_in_prepare}) {
    warnings.clear();
    // Named "cpu" so that it leads the auto order.
    auto faulty = std::make_shared<FaultyMoeBackend>("cpu", fault);
    MoeRunnerOptions with_faulty = options();
    with_faulty.backends = {faulty, std::make_shared<RefMoeBackend>()};
    with_faulty.canary = false;  // a canary would quarantine it first; this is about serving
    MoeRunner runner(std::move(with_faulty));
    expect_correct(runner, c);
    expect_correct(runner, c);  // same problem: skipped without a new warning
    EXPECT_EQ(warnings_containing("MoE backend 'cpu' failed on"), 1);
    EXPECT_EQ(faulty->runs + faulty->prepares, fault == MoeFault::throw_in_prepare ? 1 : 2)
        << "tried once (after its prepare), then skipped for this problem";
    const MoeExplanation explanation = runner.explain(problem());
    EXPECT_EQ(explanation.choice, "ref");
    EXPECT_NE(explanation.candidates.front().reason.find("failed earlier for this problem"), std::string::npos);
  }
}

TEST_F(MoeRunnerTest, WrongNumbersInTheCanaryQuarantineTheBackend) {
  for (MoeFault fault : {MoeFault::wrong_numbers, MoeFault::nan}) {
    warnings.clear();
    auto faulty = std::make_shared<FaultyMoeBackend>("cpu", fault);
    MoeRunnerOptions with_faulty = options();
    with_faulty.backends = {faulty, std::make_shared<RefMoeBackend>()};
    MoeRunner runner(std::move(with_faulty));
    expect_correct(runner, c);
    expect_correct(runner, c);
    EXPECT_EQ(faulty->runs, 1) << "only its canary ran";
    ASSERT_EQ(runner.quarantined().count("cpu"), 1u);
    EXPECT_NE(runner.quarantined().at("cpu").find("differs from ref"), std::string::npos) << runner.quarantined().at("cpu");
    EXPECT_EQ(warnings_containing("MoE backend 'cpu' is quarantined"), 1);
    const MoeExplanation explanation = runner.explain(problem());
    EXPECT_EQ(explanation.choice, "ref");
    EXPECT_NE(explanation.candidates.front().reason.find("quarantined"), std::string::npos);
  }
}

TEST_F(MoeRunnerTest, AnExplicitlyChosenBackendIsNotReplaced) {
  auto faulty = std::make_shared<FaultyMoeBackend>("cpu", MoeFault::throw_in_run);
  MoeRunnerOptions with_faulty = options("cpu");
  with_faulty.backends = {faulty, std::make_shared<RefMoeBackend>()};
  with_faulty.canary = false;
  MoeRunner runner(std::move(with_faulty));
  std::mt19937_64 rng(fp4gemm::testing::fresh_seed());
  const MoeInputs inputs = make_moe_inputs(c, rng);
  const MoeLayerHandle layer = runner.prepare(inputs.layer.weights);
  PoisonedMoeOutput out = make_poisoned_moe_output(c.tokens, c.layer.hidden, c.output);
  try {
    runner.run(inputs.call, layer, out.view);
    FAIL() << "a failing explicit backend was replaced";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::backend_failure);
    EXPECT_NE(std::string(error.what()).find("is not replaced by another"), std::string::npos) << error.what();
  }
}

TEST_F(MoeRunnerTest, BadInputIsRejectedBeforeAnyBackendRuns) {
  auto counting = std::make_shared<FaultyMoeBackend>("cpu", MoeFault::none);
  MoeRunnerOptions with_counting = options();
  with_counting.backends = {counting};
  MoeRunner runner(std::move(with_counting));
  std::mt19937_64 rng(fp4gemm::testing::fresh_seed());
  const MoeInputs inputs = make_moe_inputs(c, rng);
  const MoeLayerHandle layer = runner.prepare(inputs.layer.weights);
  PoisonedMoeOutput out = make_poisoned_moe_output(c.tokens, c.layer.hidden, c.output);
  MoeCall call = inputs.call;
  call.options.top_k = int(c.layer.experts) + 1;
  EXPECT_THROW(runner.run(call, layer, out.view), Error);
  EXPECT_TRUE(still_poisoned(out));
  EXPECT_EQ(counting->runs, 0);
}

TEST_F(MoeRunnerTest, OperandsInGpuMemoryAreUnsupportedOnACpuOnlyRunner) {
  MoeRunner runner(options());
  std::mt19937_64 rng(fp4gemm::testing::fresh_seed());
  const MoeInputs inputs = make_moe_inputs(c, rng);
  const MoeLayerHandle layer = runner.prepare(inputs.layer.weights);
  PoisonedMoeOutput out = make_poisoned_moe_output(c.tokens, c.layer.hidden, c.output);
  MoeCall call = inputs.call;
  call.x.memory = Memory::cuda;  // never read: no backend of a CPU-only runner takes it
  MutableDenseView device_out = out.view;
  device_out.memory = Memory::cuda;
  try {
    runner.run(call, layer, device_out);
    FAIL() << "ran an MoE layer on operands in GPU memory";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::unsupported);
    EXPECT_NE(std::string(error.what()).find("pass x and the output in host memory"), std::string::npos) << error.what();
  }
  EXPECT_TRUE(still_poisoned(out));
}

TEST_F(MoeRunnerTest, ResidentBytesCountEveryLayoutMade) {
  MoeRunner runner(options());
  std::mt19937_64 rng(fp4gemm::testing::fresh_seed());
  const MoeInputs inputs = make_moe_inputs(c, rng);
  const MoeLayerHandle layer = runner.prepare(inputs.layer.weights);
  EXPECT_EQ(layer.resident_bytes(), 0);
  PoisonedMoeOutput out = make_poisoned_moe_output(c.tokens, c.layer.hidden, c.output);
  runner.run(inputs.call, layer, out.view);
  EXPECT_EQ(layer.prepared_backends(), std::vector<std::string>{"cpu"});
  // The cpu layout: per expert gate_up [2I, H] and down [H, I] at 144 bytes per 4 rows x 64 columns,
  // plus the FP32 router [E, H].
  const auto layout_bytes = [](std::int64_t rows, std::int64_t cols) { return (rows + 3) / 4 * ((cols + 63) / 64) * 144; };
  const std::int64_t expected = c.layer.experts * (layout_bytes(2 * c.layer.intermediate, c.layer.hidden) +
                                                   layout_bytes(c.layer.hidden, c.layer.intermediate)) +
                                c.layer.experts * c.layer.hidden * 4;
  EXPECT_EQ(layer.resident_bytes(), expected);
}

TEST_F(MoeRunnerTest, CpuServesEveryKindOfProblemAfterItsCanary) {
  MoeRunner runner(options());
  MoeCase w4a4 = c;
  w4a4.w4a4 = true;
  w4a4.layer.shared = SharedKind::dense;
  MoeCase given = c;
  given.routing = Routing::given;
  given.layer.shared = SharedKind::nvfp4;
  given.input = DType::f32;
  given.output = DType::f16;
  for (const MoeCase& served : {c, w4a4, given}) expect_correct(runner, served);
  EXPECT_TRUE(runner.quarantined().empty()) << runner.quarantined().begin()->second;
  EXPECT_EQ(warnings.size(), 0u) << warnings.front();
}

TEST_F(MoeRunnerTest, EveryBackendPassesItsCanary) {
  MoeRunner runner(options());
  const std::vector<CanaryReport> reports = runner.run_all_canaries();
  ASSERT_EQ(reports.size(), moe_backend_names().size());
  const std::vector<std::string> host = host_moe_backend_names();
  for (const CanaryReport& report : reports) {
    if (std::find(host.begin(), host.end(), report.backend) != host.end()) {
      EXPECT_TRUE(report.passed) << report.backend << ": " << report.reason;
    } else {  // a GPU backend (CUDA builds) on this CPU-only runner
      EXPECT_FALSE(report.ran) << report.backend;
      EXPECT_NE(report.reason.find("cannot run on"), std::string::npos) << report.backend << ": " << report.reason;
    }
  }
  EXPECT_TRUE(runner.quarantined().empty());
}

}  // namespace
}  // namespace fp4gemm::moe::testing
