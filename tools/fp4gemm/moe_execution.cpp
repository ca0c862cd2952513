// The MoE layer through moe::MoeRunner for `fp4gemm moe` and the bench (moe_execution.hpp).
#include "fp4gemm/moe/moe_runner.hpp"
#include "moe_execution.hpp"

namespace fp4gemm::cli {

// Routing: the call's TopK when it has ids (the bench), else the layer's router (`fp4gemm moe`).
PreparedMoeCall prepare_moe_call(const moe::MoeWeights& weights, const std::string& backend, const moe::MoeOptions& options,
                                 const std::string& profile_path) {
  moe::MoeRunnerOptions runner_options;
  runner_options.backend = backend;
  runner_options.profile_path = profile_path;
  runner_options.device = RunnerOptions::kCpuOnly;
  auto runner = std::make_shared<moe::MoeRunner>(std::move(runner_options));
  auto handle = std::make_shared<moe::MoeLayerHandle>(runner->prepare(weights));
  auto last_problem = std::make_shared<moe::MoeProblem>();
  const std::int64_t experts = weights.num_experts(), intermediate = weights.intermediate();
  const bool shared = weights.shared.has_value();
  const std::int64_t shared_intermediate = shared ? weights.shared->intermediate() : 0;
  const bool shared_dense = shared && !weights.shared->nvfp4.has_value();
  PreparedMoeCall prepared;
  prepared.call = [=](const DenseView& x, const moe::TopK& routing, const MutableDenseView& out) {
    moe::MoeCall call{x, {}, options};
    const bool given = !routing.ids.empty();
    if (given) {
      call.routing = {routing.ids.data(), routing.weights.data()};
      call.options.top_k = routing.k;
    }
    if (call.options.activation != ActivationType::nvfp4)
      call.options.activation = x.dtype == DType::f32 ? ActivationType::f32 : ActivationType::bf16;
    moe::MoeProblem& problem = *last_problem;
    problem = {x.rows, x.cols, intermediate, experts, call.options.top_k, call.options.activation, out.dtype, given, shared,
               shared_intermediate, shared_dense};
    runner->run(call, *handle, out);
  };
  prepared.served = [runner, last_problem] { return runner->explain(*last_problem).choice; };
  prepared.explanation = [runner, last_problem] { return runner->explain(*last_problem).to_text(); };
  prepared.plan = [runner, last_problem] { return runner->explain(*last_problem).plan; };
  return prepared;
}

}  // namespace fp4gemm::cli
