// `fp4gemm moe`: run one MoE layer of a checkpoint on hidden states [T, H] from a file: the
// layer's router picks each token's experts (top-k from --topk or config.json), the experts and
// the shared expert run through the MoE runner, and one [T, H] tensor is written. Says which
// backend served and, with --explain, why.
#include <cstdio>
#include <memory>

#include "activation_input.hpp"
#include "command.hpp"
#include "fp4gemm/error.hpp"
#include "fp4gemm/io/moe_checkpoint.hpp"
#include "moe_execution.hpp"

namespace fp4gemm::cli {
namespace {

struct MoeCommandOptions {
  LayerRunFiles files;
  std::string backend;  // empty: FP4GEMM_MOE_BACKEND, else auto
  std::string device = "cpu";
  std::string profile;  // a tuned profile with "moe" entries (`fp4gemm tune --moe`)
  int top_k = 0;  // 0: config.json's num_experts_per_tok
  bool explain = false;
};

// --topk, else config.json's num_experts_per_tok; Error when neither says.
int choose_top_k(const MoeCommandOptions& options, const io::MoeLayerTensors& layer) {
  const int top_k = options.top_k > 0 ? options.top_k : layer.routing.num_experts_per_tok.value_or(0);
  if (top_k == 0) {
    throw_invalid("the checkpoint's config.json has no num_experts_per_tok; give the layer's top-k with --topk");
  }
  if (top_k > layer.shape.experts) {
    throw_invalid("top-k " + std::to_string(top_k) + " is above the layer's " + std::to_string(layer.shape.experts) + " experts");
  }
  return top_k;
}

void run_moe(const MoeCommandOptions& options) {
  const io::TensorDType output_dtype = parse_output_dtype(options.files.output_dtype);
  if (options.device != "cpu" && options.device != "auto") {
    throw_invalid("--device " + options.device + ": the MoE layer runs on the CPU in this build (cpu or auto)");
  }
  const io::Checkpoint checkpoint = io::Checkpoint::open(options.files.checkpoint);
  const io::MoeLayerTensors layer = io::load_moe_layer(checkpoint, options.files.layer);
  if (!layer.shape.router) {
    throw_invalid(checkpoint.description() + ": layer '" + options.files.layer + "' has no router (" + options.files.layer +
                  ".gate.weight), which `fp4gemm moe` routes the tokens with");
  }
  moe::MoeOptions moe_options;
  moe_options.top_k = choose_top_k(options, layer);
  moe_options.norm_topk_prob = layer.routing.norm_topk_prob_or_default();
  const io::SafetensorsFile input_file = io::SafetensorsFile::open(options.files.input);
  const Activation activation = load_activation(pick_input(input_file, options.files.input_name), layer.shape.hidden);
  const std::int64_t tokens = activation.view.rows, hidden = layer.shape.hidden;

  const moe::MoeWeights weights = layer.weights();
  const PreparedMoeCall prepared = prepare_moe_call(weights, options.backend, moe_options, options.profile);
  const DType out_type = output_dtype == io::TensorDType::f32 ? DType::f32 : DType::bf16;
  std::vector<std::uint8_t> out_bytes(std::size_t(tokens * hidden) * dtype_size(out_type));
  moe::TopK route_with_router;
  route_with_router.tokens = tokens;
  route_with_router.k = moe_options.top_k;
  prepared.call(activation.view, route_with_router, {out_bytes.data(), out_type, tokens, hidden});
  const std::string served = tokens == 0 ? "none (T = 0)" : prepared.served();
  if (options.explain) std::fprintf(stderr, "%s", prepared.explanation().c_str());

  io::SafetensorsWriter writer;
  writer.add(options.files.output_name, output_dtype, {tokens, hidden}, out_bytes);
  writer.set_metadata("fp4gemm.layer", options.files.layer);
  writer.set_metadata("fp4gemm.backend", served);
  writer.set_metadata("fp4gemm.top_k", std::to_string(moe_options.top_k));
  writer.write(options.files.output);
  std::printf("%s: T=%lld H=%lld I=%lld E=%lld k=%d norm_topk_prob=%s (%s)%s on %s; wrote '%s' [%lld, %lld] %s to %s\n", options.files.layer.c_str(),
              (long long)tokens, (long long)hidden, (long long)layer.shape.intermediate, (long long)layer.shape.experts,
              moe_options.top_k, moe_options.norm_topk_prob ? "true" : "false", layer.routing.norm_topk_prob_origin().c_str(),
              layer.shape.shared == "none" ? "" : " +shared", served.c_str(), options.files.output_name.c_str(), (long long)tokens,
              (long long)hidden, io::to_string(output_dtype), options.files.output.c_str());
}

const RegisterCommand registration([](CLI::App& app) {
  auto options = std::make_shared<MoeCommandOptions>();
  auto* command = app.add_subcommand("moe", "Run one MoE layer of a checkpoint on hidden states [T, H] from a file");
  add_layer_run_options(command, options->files, "model.layers.0.mlp (`fp4gemm inspect` lists the MoE layers)", "[T, H]", "[T, H]");
  command->add_option("--backend,--moe-backend", options->backend,
                      "auto, or an MoE backend (ref, cpu); default: FP4GEMM_MOE_BACKEND, else the tuned profile, else auto");
  command->add_option("--profile", options->profile, "Tuned profile (`fp4gemm tune --moe`) whose moe entries lead the auto order");
  command->add_option("--device", options->device, "cpu (the MoE layer's GPU backends come later)")->capture_default_str();
  command->add_option("--topk", options->top_k, "Experts per token (default: config.json's num_experts_per_tok)")
      ->check(CLI::PositiveNumber);
  command->add_flag("--explain", options->explain, "Print why that backend served to stderr");
  command->callback([options] { run_moe(*options); });
});

}  // namespace
}  // namespace fp4gemm::cli
