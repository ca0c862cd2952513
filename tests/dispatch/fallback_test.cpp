// Fault injection: a failing backend is warned about once, marked failed for that problem, and the
// next candidate produces the full, correct result; sticky CUDA errors are not papered over.
#include <gtest/gtest.h>

#include "backends/ref/ref_backend.hpp"
#include "dispatch/faulty_backends.hpp"
#include "fp4gemm/error.hpp"
#include "fp4gemm/runner.hpp"
#include "support/test_support.hpp"

namespace fp4gemm::testing {
namespace {

constexpr double kTolerance = 1e-5;

class Fallback : public ::testing::Test {
 protected:
  // A simulated H200 whose auto order is: the faulty backend, then `ref`.
  Runner make_runner(std::shared_ptr<FaultyBackend> faulty, const std::string& explicit_backend = "") {
    RunnerOptions options;
    options.simulated_device = simulated_gpu(9, 0, 130100, "NVIDIA H200 (simulated)");
    options.environment = [](const std::string&) { return std::optional<std::string>(); };
    options.log = [this](dispatch::LogLevel, const std::string& message) { warnings.push_back(message); };
    options.backends = {faulty, std::make_shared<RefBackend>()};
    options.auto_order = {faulty->name(), "ref"};
    options.backend = explicit_backend;
    options.canary = false;  // these tests inject faults into serving; canary_test covers the canary
    return Runner(std::move(options));
  }

  // Runs one GEMM through the runner and checks every element against the oracle.
  void expect_correct(Runner& runner, const GemmCase& c) {
    const std::uint64_t seed = fresh_seed();
    std::mt19937_64 rng(seed);
    const GemmOperands operands = make_operands(c, rng);
    const WeightHandle weight = runner.prepare(operands.weight.view());
    PoisonedOutput out = make_poisoned_output(c.m, c.n, c.output);
    runner.gemm(operands.activation(), weight, operands.alpha, out.view);
    const std::string failures = compare_with_reference(operands, read_output(out), c.m, c.n, c.output, kTolerance);
    EXPECT_TRUE(failures.empty()) << c.to_string() << " seed " << seed << "\n" << failures;
  }

  int warnings_containing(const std::string& phrase) const {
    int count = 0;
    for (const auto& warning : warnings) count += warning.find(phrase) != std::string::npos;
    return count;
  }

  std::vector<std::string> warnings;
  const GemmCase problem{5, 48, 64, ActivationType::bf16, DType::f32};
};

TEST_F(Fallback, RecoverableFaultsFallBackToACorrectResultAndWarnOnce) {
  const std::pair<Fault, std::string> faults[] = {
      {Fault::throw_in_run, "CUBLAS_STATUS_EXECUTION_FAILED"},
      {Fault::throw_in_prepare, "uploading the weight failed"},
      {Fault::partial_then_throw, "failed half way"},
      {Fault::out_of_memory, "ran out of host memory"},
      {Fault::foreign_exception, "not a std::exception"},
  };
  for (const auto& [fault, cause] : faults) {
    warnings.clear();
    auto faulty = std::make_shared<FaultyBackend>("faulty", fault);
    Runner runner = make_runner(faulty);
    expect_correct(runner, problem);
    expect_correct(runner, problem);  // same problem again: no new warning, the faulty one is skipped
    EXPECT_EQ(warnings_containing("backend 'faulty' failed on"), 1) << cause;
    EXPECT_EQ(warnings_containing(cause), 1) << cause << "; warnings: " << (warnings.empty() ? "" : warnings.front());
    EXPECT_EQ(faulty->runs + faulty->prepares, fault == Fault::throw_in_prepare ? 1 : 2)
        << "tried once (plus its prepare), then skipped for this problem: " << cause;

    const auto explanation = runner.explain({problem.m, problem.n, problem.k, problem.activation, problem.output});
    EXPECT_EQ(explanation.choice, "ref");
    ASSERT_FALSE(explanation.candidates.empty());
    EXPECT_FALSE(explanation.candidates.front().ok);
    EXPECT_NE(explanation.candidates.front().reason.find("failed earlier for this problem"), std::string::npos)
        << explanation.candidates.front().reason;
  }
}

TEST_F(Fallback, FailureIsRememberedPerProblemNotForEveryProblem) {
  auto faulty = std::make_shared<FaultyBackend>("faulty", Fault::throw_in_run);
  Runner runner = make_runner(faulty);
  expect_correct(runner, problem);
  GemmCase other = problem;
  other.m = 9;
  expect_correct(runner, other);
  EXPECT_EQ(faulty->runs, 2) << "a different M is a different problem: the backend is tried again";
  EXPECT_EQ(warnings_containing("backend 'faulty' failed on"), 2);
}

TEST_F(Fallback, PartialWritesAreOverwrittenByTheNextCandidate) {
  auto faulty = std::make_shared<FaultyBackend>("faulty", Fault::partial_then_throw);
  Runner runner = make_runner(faulty);
  for (DType output : {DType::f32, DType::bf16, DType::f16}) {
    GemmCase c = problem;
    c.output = output;
    c.m = 6 + int(output);  // a new problem each time, so the faulty backend writes each time
    expect_correct(runner, c);
  }
  EXPECT_EQ(faulty->runs, 3);
}

TEST_F(Fallback, StickyCudaErrorIsUnrecoverableAndNotPaperedOver) {
  auto faulty = std::make_shared<FaultyBackend>("faulty", Fault::unrecoverable);
  Runner runner = make_runner(faulty);
  std::mt19937_64 rng(fresh_seed());
  const GemmOperands operands = make_operands(problem, rng);
  const WeightHandle weight = runner.prepare(operands.weight.view());
  PoisonedOutput out = make_poisoned_output(problem.m, problem.n, problem.output);
  try {
    runner.gemm(operands.activation(), weight, operands.alpha, out.view);
    FAIL() << "a sticky CUDA error was swallowed";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::unrecoverable);
    EXPECT_NE(std::string(error.what()).find("illegal memory access"), std::string::npos) << error.what();
  }
  EXPECT_EQ(weight.prepared_backends(), std::vector<std::string>{"faulty"}) << "ref must not have been tried";
}

TEST_F(Fallback, WhenEveryCandidateFailsTheErrorListsEachCause) {
  auto first = std::make_shared<FaultyBackend>("first", Fault::throw_in_run);
  auto second = std::make_shared<FaultyBackend>("second", Fault::out_of_memory);
  RunnerOptions options;
  options.simulated_device = probe_cpu();
  options.environment = [](const std::string&) { return std::optional<std::string>(); };
  options.log = [](dispatch::LogLevel, const std::string&) {};
  options.backends = {first, second};
  options.auto_order = {"first", "second"};
  options.canary = false;
  Runner runner(std::move(options));
  std::mt19937_64 rng(fresh_seed());
  const GemmOperands operands = make_operands(problem, rng);
  PoisonedOutput out = make_poisoned_output(problem.m, problem.n, problem.output);
  try {
    runner.gemm(operands.activation(), runner.prepare(operands.weight.view()), operands.alpha, out.view);
    FAIL() << "no candidate worked, yet gemm returned";
  } catch (const Error& error) {
    const std::string message = error.what();
    EXPECT_EQ(error.code(), ErrorCode::backend_failure);
    EXPECT_NE(message.find("first: "), std::string::npos) << message;
    EXPECT_NE(message.find("second: ran out of host memory"), std::string::npos) << message;
  }
  // Now nothing is left for this problem: a clear "unsupported" naming the reasons.
  try {
    runner.gemm(operands.activation(), runner.prepare(operands.weight.view()), operands.alpha, out.view);
    FAIL() << "gemm returned with every backend failed";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::unsupported);
    EXPECT_NE(std::string(error.what()).find("fp4gemm explain"), std::string::npos) << error.what();
  }
}

TEST_F(Fallback, AnExplicitlyChosenBackendIsNotReplaced) {
  auto faulty = std::make_shared<FaultyBackend>("faulty", Fault::throw_in_run);
  Runner runner = make_runner(faulty, "faulty");
  std::mt19937_64 rng(fresh_seed());
  const GemmOperands operands = make_operands(problem, rng);
  PoisonedOutput out = make_poisoned_output(problem.m, problem.n, problem.output);
  try {
    runner.gemm(operands.activation(), runner.prepare(operands.weight.view()), operands.alpha, out.view);
    FAIL() << "the explicit backend failed but gemm returned";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::backend_failure);
    EXPECT_NE(std::string(error.what()).find("requested by --backend/API argument"), std::string::npos) << error.what();
  }
}

TEST_F(Fallback, LayoutsArePreparedLazilyPerBackend) {
  auto healthy = std::make_shared<FaultyBackend>("healthy", Fault::none);
  Runner runner = make_runner(healthy);
  std::mt19937_64 rng(fresh_seed());
  const GemmOperands operands = make_operands(problem, rng);
  const WeightHandle weight = runner.prepare(operands.weight.view());
  EXPECT_TRUE(weight.prepared_backends().empty()) << "nothing is prepared before a backend serves";
  PoisonedOutput out = make_poisoned_output(problem.m, problem.n, problem.output);
  runner.gemm(operands.activation(), weight, operands.alpha, out.view);
  runner.gemm(operands.activation(), weight, operands.alpha, out.view);
  EXPECT_EQ(weight.prepared_backends(), std::vector<std::string>{"healthy"});
  EXPECT_EQ(healthy->prepares, 1) << "a layout is made once and reused";
}

TEST_F(Fallback, ACopiedWeightOutlivesItsSource) {
  auto healthy = std::make_shared<FaultyBackend>("healthy", Fault::none);
  Runner runner = make_runner(healthy);
  std::mt19937_64 rng(fresh_seed());
  GemmOperands operands = make_operands(problem, rng);
  WeightHandle weight = runner.prepare(operands.weight.view(), WeightSource::copy);
  const Nvfp4Matrix kept = operands.weight;
  std::fill(operands.weight.codes.begin(), operands.weight.codes.end(), 0);  // the caller reuses its buffer
  PoisonedOutput out = make_poisoned_output(problem.m, problem.n, problem.output);
  runner.gemm(operands.activation(), weight, operands.alpha, out.view);
  operands.weight = kept;
  EXPECT_EQ(compare_with_reference(operands, read_output(out), problem.m, problem.n, problem.output, kTolerance), "");
}

TEST_F(Fallback, BadOperandsAreRejectedBeforeAnyBackendRuns) {
  auto healthy = std::make_shared<FaultyBackend>("healthy", Fault::none);
  Runner runner = make_runner(healthy);
  std::mt19937_64 rng(fresh_seed());
  const GemmOperands operands = make_operands(problem, rng);
  const WeightHandle weight = runner.prepare(operands.weight.view());
  PoisonedOutput out = make_poisoned_output(problem.m + 1, problem.n, problem.output);
  EXPECT_THROW(runner.gemm(operands.activation(), weight, operands.alpha, out.view), Error);
  EXPECT_EQ(healthy->runs, 0);
  EXPECT_THROW(runner.gemm(operands.activation(), WeightHandle{}, operands.alpha, out.view), Error);
  PoisonedOutput right_shape = make_poisoned_output(problem.m, problem.n, problem.output);
  MutableDenseView elsewhere = right_shape.view;
  elsewhere.memory = Memory::cuda;
  try {
    runner.gemm(operands.activation(), weight, operands.alpha, elsewhere);
    FAIL() << "activation and output in different memories were accepted";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("the activation is in host memory but the output in cuda memory"),
              std::string::npos)
        << error.what();
  }
  EXPECT_EQ(healthy->runs, 0);
  Runner other = make_runner(std::make_shared<FaultyBackend>("healthy", Fault::none));
  EXPECT_THROW(other.gemm(operands.activation(), weight, operands.alpha, out.view), Error)
      << "a handle belongs to the runner that prepared it";
}

}  // namespace
}  // namespace fp4gemm::testing
