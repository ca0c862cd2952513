// A decode step of a model from its config.json: the GEMM shapes of io/model_config.hpp, each with
// the number of layers that run it, and the MoE layer as each GPU runs it.
#include "fp4gemm/io/model_step.hpp"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "fp4gemm/error.hpp"
#include "fp4gemm/io/checkpoint.hpp"
#include "fp4gemm/io/moe_checkpoint.hpp"
#include "io/config_fields.hpp"

namespace fp4gemm::io {
namespace {

using nlohmann::json;
using namespace config_fields;

// Qwen3-Next and Qwen3.5 place one full-attention layer after every three linear ones unless
// the config says otherwise.
constexpr std::int64_t kDefaultFullAttentionInterval = 4;

// Full-attention layers of a hybrid model (the rest are linear attention).
std::int64_t full_attention_layers(const json& model, std::int64_t layers, const std::string& where) {
  const auto types = model.find("layer_types");
  if (types != model.end() && types->is_array() && !types->empty()) {
    std::int64_t full = 0;
    for (const json& type : *types) full += type.is_string() && type.get<std::string>() == "full_attention" ? 1 : 0;
    return full;
  }
  const std::int64_t interval = size_field(model, "full_attention_interval", where);
  return layers / (interval == 0 ? kDefaultFullAttentionInterval : interval);
}

// Layers that keep a dense MLP in an MoE model.
std::int64_t dense_mlp_layers(const json& model, std::int64_t layers, const std::string& where) {
  if (const std::int64_t first = size_field(model, "first_k_dense_replace", where)) return std::min(first, layers);
  const auto only = model.find("mlp_only_layers");
  if (only != model.end() && only->is_array() && !only->empty()) return std::min<std::int64_t>(std::int64_t(only->size()), layers);
  const std::int64_t step = size_field(model, "decoder_sparse_step", where);
  return step > 1 ? layers - layers / step : 0;
}

bool starts_with(const std::string& text, const char* prefix) { return text.rfind(prefix, 0) == 0; }

}  // namespace

ModelStep step_from_config_text(const std::string& text, const std::string& where, int tp, int ep) {
  if (ep < 1) throw_invalid("--ep must be 1 or more, not " + std::to_string(ep));
  const ModelGemms shapes = gemms_from_config_text(text, where, tp);  // validates the JSON and tp
  const json document = json::parse(text);
  const auto nested = document.find("text_config");
  const json& model = nested != document.end() && nested->is_object() ? *nested : document;

  ModelStep step;
  step.model_type = shapes.model_type;
  step.tp = tp;
  step.ep = ep;
  step.layers = size_field(model, "num_hidden_layers", where);
  if (step.layers == 0) throw_config(where, "has no \"num_hidden_layers\" (or 0), which a step's layer counts need");
  const bool hybrid = std::any_of(shapes.gemms.begin(), shapes.gemms.end(),
                                  [](const ModelGemm& gemm) { return starts_with(gemm.layer, "linear_attn."); });
  const std::int64_t full = hybrid ? full_attention_layers(model, step.layers, where) : step.layers;
  const std::int64_t experts = first_field(model, {"num_experts", "num_local_experts", "n_routed_experts"}, where);
  const std::int64_t dense = experts == 0 ? step.layers : dense_mlp_layers(model, step.layers, where);
  const std::int64_t moe_layers = step.layers - dense;

  for (const ModelGemm& gemm : shapes.gemms) {
    if (starts_with(gemm.layer, "experts.")) continue;  // the MoE layer below
    if (starts_with(gemm.layer, "self_attn.")) step.gemms.push_back({"attention", gemm, full});
    else if (starts_with(gemm.layer, "linear_attn.")) step.gemms.push_back({"linear attention", gemm, step.layers - full});
    else if (starts_with(gemm.layer, "mlp.")) step.gemms.push_back({"dense MLP", gemm, dense});
    else step.gemms.push_back({"shared expert", gemm, moe_layers});
  }
  if (experts > 0 && moe_layers > 0) {
    StepMoe moe;
    const std::int64_t k = size_field(model, "num_experts_per_tok", where);
    if (k == 0 || k > experts) throw_config(where, "has experts but \"num_experts_per_tok\" is missing or above the expert count");
    const std::int64_t intermediate = first_field(model, {"moe_intermediate_size", "intermediate_size"}, where);
    const auto norm = model.find("norm_topk_prob");
    const bool given = norm != model.end() && norm->is_boolean();
    moe.norm_topk_prob = given ? norm->get<bool>() : default_norm_topk_prob(step.model_type);
    MoeRoutingConfig routing;
    routing.model_type = step.model_type;
    if (given) routing.norm_topk_prob = moe.norm_topk_prob;
    moe.norm_topk_prob_origin = routing.norm_topk_prob_origin();
    moe.hidden = size_field(model, "hidden_size", where);
    moe.count = moe_layers;
    if (ep > 1) {
      if (experts % ep != 0) {
        throw_invalid(where + ": " + std::to_string(experts) + " experts do not split over " + std::to_string(ep) + " GPUs (--ep)");
      }
      moe.experts = experts / ep;
      moe.intermediate = intermediate;
      moe.top_k = int((k + ep - 1) / ep);
    } else {
      if (intermediate % tp != 0) {
        throw_invalid(where + ": the experts' intermediate size " + std::to_string(intermediate) + " does not split over " +
                      std::to_string(tp) + " GPUs (--tp)");
      }
      moe.experts = experts;
      moe.intermediate = intermediate / tp;
      moe.top_k = int(k);
    }
    step.moe = moe;
  }
  return step;
}

ModelStep step_from_config(const std::filesystem::path& path, int tp, int ep) {
  const std::filesystem::path file = std::filesystem::is_directory(path) ? path / "config.json" : path;
  const std::optional<std::string> text = read_small_text_file(file);
  if (!text) throw Error(ErrorCode::io, file.string() + ": no such file (give a model's config.json or its directory)");
  return step_from_config_text(*text, file.string(), tp, ep);
}

}  // namespace fp4gemm::io
