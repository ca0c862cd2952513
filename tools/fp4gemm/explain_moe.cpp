// `fp4gemm explain --moe` (explain_moe.hpp).
#include "explain_moe.hpp"

#include <cstdio>

#include <nlohmann/json.hpp>

#include "dispatch/device_arguments.hpp"
#include "fp4gemm/error.hpp"
#include "fp4gemm/moe/moe_runner.hpp"

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

nlohmann::json explanation_json(const moe::MoeExplanation& explanation) {
  nlohmann::json candidates = nlohmann::json::array();
  for (const dispatch::CandidateReport& candidate : explanation.candidates) {
    candidates.push_back({{"backend", candidate.backend}, {"origin", candidate.origin}, {"ok", candidate.ok}, {"reason", candidate.reason}});
  }
  return {{"problem", explanation.problem.to_string()},
          {"device", explanation.device},
          {"setting", explanation.setting},
          {"setting_origin", explanation.setting_origin},
          {"profile", explanation.profile.detail},
          {"candidates", candidates},
          {"order", explanation.order_evidence},
          {"choice", explanation.choice},
          {"choice_reason", explanation.choice_reason},
          {"plan", explanation.plan}};
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
    std::printf("%s\n", explanation_json(explanation).dump(2).c_str());
    return;
  }
  std::printf("%s", explanation.to_text().c_str());
  if (request.simulate_sm > 0) std::printf("note:     simulated device (no GPU touched)\n");
}

}  // namespace fp4gemm::cli
