// What backends keep per weight, and what the runner reports: each host backend's layout holds
// exactly what its residency() says; a handle and the runner add up the layouts made so far; explain
// prints the choice's memory and, under auto, what the choices across M hold together; `auto`
// never picks a backend that keeps a dense copy of the weight (only a request by name does).
#include <gtest/gtest.h>

#include "backends/cpu/cpu_backend.hpp"
#include "backends/ref/ref_backend.hpp"
#include "dispatch/faulty_backends.hpp"
#include "fp4gemm/runner.hpp"
#include "support/test_support.hpp"

namespace fp4gemm::testing {
namespace {

RunnerOptions quiet_options() {
  RunnerOptions options;
  options.environment = [](const std::string&) { return std::optional<std::string>(); };
  options.log = [](dispatch::LogLevel, const std::string&) {};
  return options;
}

RunnerOptions host_options() {
  RunnerOptions options = quiet_options();
  options.device = RunnerOptions::kCpuOnly;
  options.backends = {std::make_shared<CpuBackend>(), std::make_shared<RefBackend>()};
  return options;
}

// A simulated H200-class GPU with stand-ins for the GPU backends (explain only: nothing runs on them).
RunnerOptions simulated_sm90_options() {
  RunnerOptions options = quiet_options();
  options.simulated_device = simulated_gpu(9, 0);
  options.backends = {std::make_shared<CpuBackend>(), std::make_shared<RefBackend>(), cuda_nvfp4_stand_in(),
                      cuda_dequant_cublas_stand_in(), cuda_bf16_copy_stand_in()};
  return options;
}

TEST(ResidentMemory, HostLayoutsHoldWhatResidencySays) {
  std::mt19937_64 rng(fresh_seed());
  CpuBackend cpu;
  RefBackend ref;
  const DeviceInfo host = probe_cpu();
  for (const auto& [n, k] : {std::pair<std::int64_t, std::int64_t>{1, 16}, {5, 80}, {129, 64}, {300, 4096}}) {
    const GemmOperands operands = make_operands({1, n, k, ActivationType::f32, DType::f32}, rng);
    for (Backend* backend : {static_cast<Backend*>(&cpu), static_cast<Backend*>(&ref)}) {
      const WeightResidency promised = backend->residency(n, k);
      const auto prepared = backend->prepare(operands.weight.view(), host);
      EXPECT_EQ(prepared->resident_bytes, promised.bytes) << backend->name() << " " << n << "x" << k;
      EXPECT_EQ(promised.memory, Memory::host);
      EXPECT_FALSE(promised.dense_copy) << backend->name();
      EXPECT_FALSE(promised.layout.empty()) << backend->name();
    }
  }
  // Aligned shapes are exactly 0.5625 B/element: no padding, no dense copy.
  EXPECT_EQ(cpu.residency(256, 4096).bytes, 256 * 4096 * 9 / 16);
  EXPECT_EQ(ref.residency(256, 4096).bytes, 256 * 4096 * 9 / 16);
}

TEST(ResidentMemory, HandleAndRunnerAddUpTheLayoutsMade) {
  std::mt19937_64 rng(fresh_seed());
  Runner runner(host_options());
  const GemmOperands operands = make_operands({2, 64, 128, ActivationType::f32, DType::f32}, rng);
  EXPECT_EQ(runner.resident().total(), 0);
  {
    const WeightHandle weight = runner.prepare(operands.weight.view());
    EXPECT_EQ(weight.resident().total(), 0) << "layouts are made when a backend first serves";
    PoisonedOutput out = make_poisoned_output(2, 64, DType::f32);
    runner.gemm(operands.activation(), weight, operands.alpha, out.view);
    const std::int64_t cpu_bytes = CpuBackend().residency(64, 128).bytes;
    const ResidentMemory held = weight.resident();
    EXPECT_EQ(held.host_bytes, cpu_bytes);
    EXPECT_EQ(held.device_bytes, 0);
    ASSERT_EQ(held.by_backend.size(), 1u);
    EXPECT_EQ(held.by_backend.at("cpu"), cpu_bytes);
    EXPECT_EQ(runner.resident().total(), cpu_bytes);

    // A copied source counts as host memory too.
    const WeightHandle copied = runner.prepare(operands.weight.view(), WeightSource::copy);
    const std::int64_t source_bytes = 64 * 64 + 64 * 8;  // codes K/2 and scales K/16 per row
    EXPECT_EQ(copied.resident().by_backend.at("source copy"), source_bytes);
    EXPECT_EQ(runner.resident().total(), cpu_bytes + source_bytes);
  }
  EXPECT_EQ(runner.resident().total(), 0) << "released handles hold nothing";
}

TEST(ResidentMemory, ExplainPrintsTheChoiceMemoryAndEveryMChoice) {
  Runner runner(host_options());
  const dispatch::Explanation explanation = runner.explain({1, 256, 512, ActivationType::bf16, DType::bf16});
  const dispatch::MemoryReport& memory = explanation.memory;
  ASSERT_TRUE(memory.available);
  EXPECT_EQ(memory.backend, "cpu");
  EXPECT_EQ(memory.resident_bytes, CpuBackend().residency(256, 512).bytes);
  EXPECT_EQ(memory.memory, "host");
  EXPECT_EQ(memory.nvfp4_bytes, 256 * 512 * 9 / 16);
  EXPECT_EQ(memory.bf16_bytes, 256 * 512 * 2);
  EXPECT_GT(memory.workspace_bytes, 0);
  ASSERT_EQ(memory.served.size(), 1u);
  EXPECT_EQ(memory.served[0].backend, "cpu");
  EXPECT_EQ(memory.served[0].m_first, 1);
  EXPECT_EQ(memory.served[0].m_last, 65536);
  EXPECT_EQ(memory.served_bytes, memory.resident_bytes);
  const std::string text = explanation.to_text();
  EXPECT_NE(text.find("memory:   cpu keeps"), std::string::npos) << text;
  EXPECT_NE(text.find("this weight holds"), std::string::npos) << text;
}

TEST(ResidentMemory, AWeightServedByTwoBackendsCountsEachLayoutOnce) {
  // On SM 9.0, auto serves 12288x4096 with cuda_nvfp4 up to M = 2048 and with cuda_dequant_cublas
  // above: the weight is held in both layouts, each once.
  Runner runner(simulated_sm90_options());
  const dispatch::Explanation explanation = runner.explain({1, 12288, 4096, ActivationType::bf16, DType::bf16});
  const dispatch::MemoryReport& memory = explanation.memory;
  ASSERT_EQ(memory.served.size(), 2u) << explanation.to_text();
  EXPECT_EQ(memory.served[0].backend, "cuda_nvfp4");
  EXPECT_EQ(memory.served[0].m_last, 2048);
  EXPECT_EQ(memory.served[1].backend, "cuda_dequant_cublas");
  EXPECT_EQ(memory.served[1].m_first, 4096);
  EXPECT_EQ(memory.served_bytes, memory.served[0].resident_bytes + memory.served[1].resident_bytes);
  EXPECT_LT(memory.served_bytes, memory.bf16_bytes) << "two NVFP4 layouts are still smaller than one BF16 copy";
}

TEST(ResidentMemory, AutoNeverPicksADenseCopyOnlyARequestDoes) {
  // Even ranked first, the dense-copy backend is passed over with the reason.
  RunnerOptions options = simulated_sm90_options();
  options.auto_order = {"cuda_bf16_copy", "cuda_dequant_cublas", "cpu", "ref"};
  Runner runner(options);
  for (std::int64_t m : {1, 512, 8192}) {
    const dispatch::Explanation explanation = runner.explain({m, 4096, 4096, ActivationType::bf16, DType::bf16});
    EXPECT_EQ(explanation.choice, "cuda_dequant_cublas") << explanation.to_text();
    const auto& first = explanation.candidates.front();
    EXPECT_EQ(first.backend, "cuda_bf16_copy");
    EXPECT_FALSE(first.ok);
    EXPECT_NE(first.reason.find("never picks a backend that keeps a dense copy"), std::string::npos) << first.reason;
    EXPECT_NE(first.reason.find("32 MiB for this 4096x4096 weight against 9 MiB in NVFP4"), std::string::npos) << first.reason;
  }
  // Named, it serves, and explain says what it costs.
  RunnerOptions named = simulated_sm90_options();
  named.backend = "cuda_bf16_copy";
  Runner by_name(named);
  const dispatch::Explanation explanation = by_name.explain({512, 4096, 4096, ActivationType::bf16, DType::bf16});
  EXPECT_EQ(explanation.choice, "cuda_bf16_copy");
  EXPECT_TRUE(explanation.memory.dense_copy);
  EXPECT_EQ(explanation.memory.resident_bytes, 4096 * 4096 * 2);
  EXPECT_TRUE(explanation.memory.served.empty()) << "an explicit choice serves every M itself";
  EXPECT_NE(explanation.to_text().find("a dense copy: it serves only when named"), std::string::npos);
}

}  // namespace
}  // namespace fp4gemm::testing
