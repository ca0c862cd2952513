// The runner under concurrent calls, and its per-problem plan cache staying truthful after a
// quarantine or failure.
#include <gtest/gtest.h>

#include <thread>

#include "backends/ref/ref_backend.hpp"
#include "dispatch/faulty_backends.hpp"
#include "fp4gemm/runner.hpp"
#include "support/test_support.hpp"

namespace fp4gemm::testing {
namespace {

RunnerOptions quiet_options(std::vector<std::shared_ptr<Backend>> backends, std::vector<std::string> order) {
  RunnerOptions options;
  options.simulated_device = probe_cpu();
  options.environment = [](const std::string&) { return std::optional<std::string>(); };
  options.log = [](dispatch::LogLevel, const std::string&) {};
  options.backends = std::move(backends);
  options.auto_order = std::move(order);
  return options;
}

TEST(RunnerConcurrency, ManyThreadsShareOneRunnerAndOneWeight) {
  auto flaky = std::make_shared<FaultyBackend>("flaky", Fault::throw_in_run);
  RunnerOptions options = quiet_options({flaky, std::make_shared<RefBackend>()}, {"flaky", "ref"});
  options.canary = false;  // so the flaky backend fails while serving, not in a canary
  Runner runner(std::move(options));
  std::mt19937_64 rng(fresh_seed());
  const GemmCase base{1, 40, 64, ActivationType::bf16, DType::f32};
  const GemmOperands shared = make_operands(base, rng);
  const WeightHandle weight = runner.prepare(shared.weight.view());
  constexpr int kThreads = 8;
  std::vector<std::string> failures(kThreads);
  std::vector<std::thread> threads;
  for (int thread = 0; thread < kThreads; ++thread) {
    threads.emplace_back([&, thread] {
      std::mt19937_64 local(std::uint64_t(thread) * 7919 + 1);
      for (int call = 0; call < 5; ++call) {
        GemmCase c = base;
        c.m = 1 + (thread + call) % 4;  // a few distinct problems, each failing over once
        GemmOperands operands = make_operands(c, local);
        operands.weight = shared.weight;  // every thread multiplies by the one shared weight
        PoisonedOutput out = make_poisoned_output(c.m, c.n, c.output);
        try {
          runner.gemm(operands.activation(), weight, operands.alpha, out.view);
          failures[thread] += compare_with_reference(operands, read_output(out), c.m, c.n, c.output, 1e-5);
        } catch (const std::exception& error) {
          failures[thread] += error.what();
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  for (int thread = 0; thread < kThreads; ++thread) EXPECT_EQ(failures[thread], "") << "thread " << thread;
  EXPECT_EQ(weight.prepared_backends(), (std::vector<std::string>{"flaky", "ref"}));
  // Four distinct problems; each may have failed over concurrently, but is then remembered.
  EXPECT_GE(flaky->runs, 4);
  const int runs_after = flaky->runs;
  PoisonedOutput out = make_poisoned_output(1, 40, DType::f32);
  runner.gemm(shared.activation(), weight, shared.alpha, out.view);
  EXPECT_EQ(flaky->runs, runs_after) << "a problem that failed over is not retried on the failed backend";
}

TEST(RunnerConcurrency, CachedPlanDropsABackendQuarantinedLater) {
  auto zeros = std::make_shared<FaultyBackend>("zeros", Fault::zeros);
  RunnerOptions options = quiet_options({zeros, std::make_shared<RefBackend>()}, {"zeros", "ref"});
  options.canary = false;  // serve without canaries first: the broken backend gets through
  Runner runner(std::move(options));
  std::mt19937_64 rng(fresh_seed());
  const GemmCase c{3, 32, 64, ActivationType::bf16, DType::f32};
  const GemmOperands operands = make_operands(c, rng);
  const WeightHandle weight = runner.prepare(operands.weight.view());
  PoisonedOutput out = make_poisoned_output(c.m, c.n, c.output);
  runner.gemm(operands.activation(), weight, operands.alpha, out.view);
  EXPECT_EQ(runner.explain({c.m, c.n, c.k, c.activation, c.output}).choice, "zeros");
  // `fp4gemm doctor` (or an application) runs the canaries now: zeros is quarantined ...
  runner.run_all_canaries();
  ASSERT_EQ(runner.quarantined().count("zeros"), 1u);
  // ... and the very same problem, planned before, is now served by ref.
  out = make_poisoned_output(c.m, c.n, c.output);
  const int runs_before = zeros->runs;
  runner.gemm(operands.activation(), weight, operands.alpha, out.view);
  EXPECT_EQ(zeros->runs, runs_before);
  EXPECT_EQ(compare_with_reference(operands, read_output(out), c.m, c.n, c.output, 1e-5), "");
}

}  // namespace
}  // namespace fp4gemm::testing
