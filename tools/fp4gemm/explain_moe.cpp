// `fp4gemm explain --moe` (explain_moe.hpp).
#include "explain_moe.hpp"

#include <cstdio>

#include "dispatch/device_arguments.hpp"
#include "fp4gemm/error.hpp"
#include "fp4gemm/moe/moe_runner.hpp"
#include "reports.hpp"

namespace fp4gemm::cli {
namespace {

moe::MoeRunnerOptions runner_options(const MoeExplainRequest& request) {
  RunnerOptions device;  // the dense runner's device arguments, so --device and --simulate-sm mean the same
  dispatch::apply_device_arguments(device, request.device, request.simulate_sm, request.simulate_cublaslt);
  moe::MoeRunnerOptions options;
  options.backend = request.backend;
  options.profile_path = request.profile;
  options.device = device.device;
  options.simulated_device = device.simulated_device;
  return options;
}

}  // namespace

void run_moe_explain(const MoeExplainRequest& request) {
  bench::check_moe_bench_shape(request.shape);
  if (request.tokens < 1) throw_invalid("--tokens must be positive");
  const bench::MoeBenchShape& shape = request.shape;
  const moe::MoeProblem problem{request.tokens,       shape.hidden, shape.intermediate, shape.experts, shape.top_k, ActivationType::bf16,
                                DType::bf16,          request.routing_given, shape.shared_intermediate > 0,
                                shape.shared_intermediate, false};
  const moe::MoeRunner runner(runner_options(request));
  const moe::MoeExplanation explanation = runner.explain(problem);
  if (request.json) {
    std::printf("%s\n", moe_explanation_report(explanation).dump(2).c_str());
    return;
  }
  std::printf("%s", explanation.to_text().c_str());
  if (request.simulate_sm > 0) std::printf("note:     simulated device (no GPU touched)\n");
}

}  // namespace fp4gemm::cli
