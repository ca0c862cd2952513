// The MoE runner on a GPU with operands in host memory: cuda_moe serves them staged (x and the given
// routing copied to the device, the result copied back into the host output), and every element
// of the poisoned host output matches the FP64 oracle. Skips without a GPU.
#include <gtest/gtest.h>

#include "fp4gemm/moe/moe_runner.hpp"
#include "gpu/gpu_test_support.hpp"
#include "moe/moe_test_support.hpp"

namespace fp4gemm::moe::testing {
namespace {

TEST(CudaMoeStaging, HostOperandsAreServedByTheGpuBackendThroughStaging) {
  const auto gpu = fp4gemm::testing::first_gpu();
  if (!gpu) GTEST_SKIP() << "no GPU: " << cuda_unavailable_reason();
  MoeRunnerOptions options;
  options.device = gpu->index;
  options.log = [](dispatch::LogLevel, const std::string&) {};
  MoeRunner runner(options);
  const std::uint64_t seed = fp4gemm::testing::fresh_seed();
  std::mt19937_64 rng(seed);
  for (const bool given_routing : {false, true}) {
    MoeCase c;
    c.tokens = 5;
    c.routing = given_routing ? Routing::given : Routing::router;
    const MoeInputs inputs = make_moe_inputs(c, rng);
    const MoeLayerHandle layer = runner.prepare(inputs.layer.weights);
    PoisonedMoeOutput out = make_poisoned_moe_output(c.tokens, c.layer.hidden, c.output);
    runner.run(inputs.call, layer, out.view);
    const MoeExplanation explanation = runner.explain(problem_of(c));
    if (explanation.choice != "cuda_moe") GTEST_SKIP() << "cuda_moe does not lead here: " << explanation.choice_reason;
    EXPECT_EQ(layer.prepared_backends(), std::vector<std::string>{"cuda_moe"}) << "seed " << seed;
    const std::string failures =
        compare_with_moe_reference(reference_moe(inputs.layer.weights, inputs.call, kAccumulationError), out.view.as_const());
    EXPECT_TRUE(failures.empty()) << "seed " << seed << (given_routing ? " given routing\n" : " router routing\n") << failures;
  }
  EXPECT_TRUE(runner.quarantined().empty());
}

}  // namespace
}  // namespace fp4gemm::moe::testing
