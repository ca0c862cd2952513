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
  moe::MoeRunnerOptions options;
  options.backend = request.backend;
  options.profile_path = request.profile;
  dispatch::apply_device_arguments(options.device, options.simulated_device, request.device, request.simulate_sm,
                                   request.simulate_cublaslt);
  return options;
}

}  // namespace

void run_moe_explain(const MoeExplainRequest& request) {
  bench::check_moe_bench_shape(request.shape);
  if (request.tokens < 1) throw_invalid("--tokens must be positive");
  const moe::MoeRunner runner(runner_options(request));
  const moe::MoeExplanation explanation = runner.explain(request.shape.problem(request.tokens, request.routing_given));
  if (request.json) {
    std::printf("%s\n", moe_explanation_report(explanation).dump(2).c_str());
    return;
  }
  std::printf("%s", explanation.to_text().c_str());
  if (request.simulate_sm > 0) std::printf("note:     simulated device (no GPU touched)\n");
}

}  // namespace fp4gemm::cli
