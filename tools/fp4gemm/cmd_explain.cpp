// `fp4gemm explain`: which backend would serve a GEMM here and why — the device, every candidate
// with ok or its reason, the tuned-profile hit or miss, the choice, and the roofline estimate.
// With --config, the choice and its reason for each GEMM of a model (io/model_config.hpp). With
// --rules, the table of thresholds cuda_nvfp4's selector decides by, with the measurement behind each.
// With --moe, an MoE layer at T tokens instead (explain_moe.hpp).
#include <cstdio>
#include <memory>

#include <nlohmann/json.hpp>

#include "backends/cuda_nvfp4/plan.hpp"
#include "bench_moe.hpp"
#include "command.hpp"
#include "explain_moe.hpp"
#include "problem_options.hpp"
#include "reports.hpp"
#include "type_options.hpp"
#include "dispatch/device_arguments.hpp"
#include "fp4gemm/error.hpp"
#include "fp4gemm/io/model_config.hpp"
#include "fp4gemm/runner.hpp"

namespace fp4gemm::cli {
namespace {

struct ExplainOptions {
  std::int64_t m = 1, n = 4096, k = 4096;
  std::string device = "auto";
  std::string backend;
  std::string activation = "bf16";
  std::string output = "bf16";
  std::string profile;
  std::string config;  // a model's config.json: explain each of its GEMMs at M instead of -n/-k
  int tp = 1;
  int simulate_sm = 0;
  int simulate_cublaslt = 130100;
  bool canary = false;
  bool json = false;
  bool rules = false;  // print cuda_nvfp4's selection rules table instead
  // --moe: an MoE layer (the sizes, or --config's) at `tokens`, routed by its router unless given.
  bool moe = false;
  bench::MoeBenchShape moe_shape{64, 1024, 512, 0, 8, true};
  std::int64_t tokens = 1;
  bool given_routing = false;
};

Runner make_runner(const ExplainOptions& options) {
  RunnerOptions runner_options;
  runner_options.backend = options.backend;
  runner_options.profile_path = options.profile;
  dispatch::apply_device_arguments(runner_options, options.device, options.simulate_sm, options.simulate_cublaslt);
  return Runner(std::move(runner_options));
}

// One line per GEMM of the model: its layer, shape, the choice and why (the full explanation of one
// is `explain -m M -n N -k K`); --json gives each GEMM's whole explanation.
void run_explain_config(const ExplainOptions& options) {
  if (options.m < 1) throw_invalid("-m must be positive");
  const io::ModelGemms model = io::gemms_from_config(options.config, options.tp);
  const ActivationType activation = parse_activation(options.activation);
  const DType output = parse_output(options.output);
  Runner runner = make_runner(options);
  if (options.canary) runner.run_all_canaries(activation, output);
  nlohmann::json layers = nlohmann::json::array();
  if (!options.json) {
    std::printf("model:  %s (%s), M = %lld%s\ndevice: %s\n\n", options.config.c_str(),
                model.model_type.empty() ? "model_type not given" : model.model_type.c_str(), static_cast<long long>(options.m),
                options.tp > 1 ? (", each GPU's shard of " + std::to_string(options.tp)).c_str() : "",
                runner.device().to_string().c_str());
  }
  for (const io::ModelGemm& gemm : model.gemms) {
    if (gemm.k % 16 != 0) throw_invalid("--config " + gemm.layer + ": K = " + std::to_string(gemm.k) + " is not a multiple of 16");
    const dispatch::Explanation explanation = runner.explain({options.m, gemm.n, gemm.k, activation, output});
    if (options.json) {
      layers.push_back({{"layer", gemm.layer}, {"explanation", explanation_report(explanation)}});
      continue;
    }
    const std::string shape = std::to_string(gemm.n) + "x" + std::to_string(gemm.k);
    std::printf("  %-30s %12s  %s: %s\n", gemm.layer.c_str(), shape.c_str(),
                explanation.choice.empty() ? "none" : explanation.choice.c_str(), explanation.choice_reason.c_str());
  }
  if (options.json) {
    std::printf("%s\n", nlohmann::json{{"config", options.config}, {"model_type", model.model_type}, {"tp", options.tp}, {"layers", layers}}
                            .dump(2)
                            .c_str());
  } else {
    std::printf("\nWhy, for one of them: fp4gemm explain -m %lld -n N -k K (same options)\n", static_cast<long long>(options.m));
  }
}

void run_explain(const ExplainOptions& options) {
  if (options.rules) {
    std::printf("cuda_nvfp4 selection rules (H200 unless an H100 is named; times per call):\n\n%s",
                cuda_nvfp4::describe_selection_rules().c_str());
    return;
  }
  if (options.moe) {
    MoeExplainRequest request{options.config.empty() ? options.moe_shape : moe_shape_from_config(options.config, options.tp, 1),
                              options.tokens,
                              options.given_routing,
                              options.backend,
                              options.device,
                              options.profile,
                              options.simulate_sm,
                              options.simulate_cublaslt,
                              options.json};
    return run_moe_explain(request);
  }
  if (!options.config.empty()) return run_explain_config(options);
  if (options.m < 1 || options.n < 1 || options.k < 1) throw_invalid("-m, -n and -k must be positive");
  if (options.k % 16 != 0) throw_invalid("-k " + std::to_string(options.k) + " is not a multiple of 16, the NVFP4 block size");
  const GemmProblem problem{options.m, options.n, options.k, parse_activation(options.activation), parse_output(options.output)};
  Runner runner = make_runner(options);
  if (options.canary) runner.run_all_canaries(problem.activation, problem.output);
  const dispatch::Explanation explanation = runner.explain(problem);
  if (options.json) {
    std::printf("%s\n", explanation_report(explanation).dump(2).c_str());
  } else {
    std::printf("%s", explanation.to_text().c_str());
    if (options.simulate_sm > 0) {
      const int version = options.simulate_cublaslt;
      std::printf("note:     simulated device (no GPU touched); cuBLASLt %s; pass --simulate-cublaslt to change\n",
                  version == 0 ? "absent"
                               : ("assumed " + std::to_string(version / 10000) + "." + std::to_string(version / 100 % 100) +
                                  "." + std::to_string(version % 100))
                                     .c_str());
    }
  }
}

const RegisterCommand registration([](CLI::App& app) {
  auto options = std::make_shared<ExplainOptions>();
  auto* command = app.add_subcommand("explain", "Show which backend would run a GEMM on this machine and why");
  command->add_option("-m", options->m, "Activation rows M (default 1)");
  auto* n = command->add_option("-n", options->n, "Weight rows N (default 4096)");
  auto* k = command->add_option("-k", options->k, "Reduction size K, a multiple of 16 (default 4096)");
  auto* config = add_model_config_options(command, options->config, options->tp,
                                          "the choice for each of its GEMMs at M, instead of -n/-k (with --moe: its MoE layer)")
                     ->excludes(n)
                     ->excludes(k);
  auto* moe = command->add_flag("--moe", options->moe,
                                "Explain an MoE layer at --tokens instead (its shape from --config or "
                                "--experts/--topk/--hidden/--intermediate): the MoE backend and its plan")
                  ->excludes(n)
                  ->excludes(k);
  add_moe_layer_options(command, options->moe_shape, moe, config);
  command->add_option("--shared-intermediate", options->moe_shape.shared_intermediate, "With --moe: shared expert size (default 0: none)")
      ->needs(moe)
      ->excludes(config);
  command->add_option("--tokens", options->tokens, "With --moe: tokens T the layer serves at once (default 1)")->needs(moe)->check(CLI::PositiveNumber);
  command->add_flag("--given-routing", options->given_routing, "With --moe: the routing is given (default: the layer's router routes)")
      ->needs(moe);
  command->add_option("--device", options->device, "auto (default: the first GPU, else the CPU), cpu, I or cuda:I");
  command->add_option("--backend", options->backend, "Explain an explicit choice instead of auto (wins over FP4GEMM_BACKEND)");
  command->add_option("--activation", options->activation, "bf16 (W4A16, default), f32 or nvfp4 (W4A4)");
  command->add_option("--output", options->output, "bf16 (default), f16 or f32");
  command->add_option("--profile", options->profile, "A tuned profile (JSON) to consult");
  command->add_option("--simulate-sm", options->simulate_sm, "Explain for a simulated GPU of this SM (e.g. 90, 100, 120) instead");
  command->add_option("--simulate-cublaslt", options->simulate_cublaslt,
                      "cuBLASLt version of the simulated GPU, major*10000+minor*100+patch; 0 = absent (default 130100)");
  command->add_flag("--canary", options->canary, "Run every backend's canary first, so quarantines show")->excludes(moe);
  command->add_flag("--json", options->json, "Print one JSON document");
  command->add_flag("--rules", options->rules, "Print the thresholds cuda_nvfp4's selector decides by, with their measurements")
      ->excludes(moe);
  command->callback([options] { run_explain(*options); });
});

}  // namespace
}  // namespace fp4gemm::cli
