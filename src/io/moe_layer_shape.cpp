// Finding the MoE layers of a checkpoint and their shapes from tensor headers alone, and the
// routing settings of config.json.
#include <algorithm>
#include <array>
#include <set>

#include <nlohmann/json.hpp>

#include "fp4gemm/io/modelopt.hpp"
#include "fp4gemm/io/moe_checkpoint.hpp"
#include "io/moe_tensor_names.hpp"

namespace fp4gemm::io {
namespace {

[[noreturn]] void bad_tensor(const TensorView& tensor, const std::string& what) {
  throw_io(*tensor.file + ": tensor '" + tensor.name() + "' " + what);
}

std::string shape_text(std::initializer_list<std::int64_t> shape) {
  std::string text = "[";
  for (std::int64_t size : shape) text += (text.size() > 1 ? ", " : "") + std::to_string(size);
  return text + "]";
}

// A fused U8 [E, N, K/2] tensor: {E, N, K}.
std::array<std::int64_t, 3> fused_codes_shape(const Checkpoint& checkpoint, const std::string& base) {
  const auto weight = moe_names::fused_weight(checkpoint, base);
  if (!weight) throw_io(checkpoint.description() + ": has no tensor named '" + base + "' (the fused experts' codes)");
  if (weight->dtype() != TensorDType::u8 || weight->shape().size() != 3) {
    bad_tensor(*weight, std::string("is ") + to_string(weight->dtype()) + " " + weight->entry->shape_string() +
                            ", not fused NVFP4 expert codes (U8, 3-D [E, N, K/2]); the checkpoint is not NVFP4 or is damaged");
  }
  return {weight->shape()[0], weight->shape()[1], weight->shape()[2] * 2};
}

// The highest e + 1 of the names "PREFIX.experts.{e}." in the checkpoint.
std::int64_t count_per_expert_indices(const Checkpoint& checkpoint, const std::string& prefix) {
  const std::string start = prefix + ".experts.";
  std::int64_t experts = 0;
  for (const std::string& name : checkpoint.tensor_names()) {
    if (name.compare(0, start.size(), start) != 0) continue;
    std::size_t digits = start.size();
    while (digits < name.size() && std::isdigit(static_cast<unsigned char>(name[digits]))) ++digits;
    if (digits == start.size() || digits == name.size() || name[digits] != '.') continue;
    experts = std::max<std::int64_t>(experts, std::stoll(name.substr(start.size(), digits - start.size())) + 1);
  }
  return experts;
}

void describe_fused(const Checkpoint& checkpoint, MoeLayerShape& shape) {
  const auto gate_up = fused_codes_shape(checkpoint, moe_names::fused(shape.prefix, "gate_up_proj"));
  const auto down = fused_codes_shape(checkpoint, moe_names::fused(shape.prefix, "down_proj"));
  shape.layout = moe::ExpertLayout::fused_gate_up;
  shape.experts = gate_up[0];
  shape.intermediate = gate_up[1] / 2;
  shape.hidden = gate_up[2];
  if (gate_up[1] % 2 != 0 || down[0] != shape.experts || down[1] != shape.hidden || down[2] != shape.intermediate) {
    throw_io(checkpoint.description() + ": " + shape.prefix + ".experts.gate_up_proj holds [E, 2I, H] = " +
             shape_text({gate_up[0], gate_up[1], gate_up[2]}) + " but " + shape.prefix + ".experts.down_proj holds [E, H, I] = " +
             shape_text({down[0], down[1], down[2]}) +
             "; they must agree (the [E, H, 2I] transposed layout of some exports is not supported)");
  }
}

void describe_separate(const Checkpoint& checkpoint, MoeLayerShape& shape) {
  shape.layout = moe::ExpertLayout::separate;
  shape.experts = count_per_expert_indices(checkpoint, shape.prefix);
  for (std::int64_t e = 0; e < shape.experts; ++e) {
    const Nvfp4Layer gate = load_nvfp4_layer(checkpoint, moe_names::expert(shape.prefix, e, "gate_proj"), false);
    const Nvfp4Layer up = load_nvfp4_layer(checkpoint, moe_names::expert(shape.prefix, e, "up_proj"), false);
    const Nvfp4Layer down = load_nvfp4_layer(checkpoint, moe_names::expert(shape.prefix, e, "down_proj"), false);
    if (e == 0) {
      shape.intermediate = gate.rows;
      shape.hidden = gate.cols;
    }
    for (const Nvfp4Layer* layer : {&gate, &up, &down}) {
      const bool is_down = layer == &down;
      const std::int64_t rows = is_down ? shape.hidden : shape.intermediate, cols = is_down ? shape.intermediate : shape.hidden;
      if (layer->rows != rows || layer->cols != cols) {
        bad_tensor(layer->weight, "holds a [" + std::to_string(layer->rows) + ", " + std::to_string(layer->cols) +
                                      "] weight, but expert 0 makes it [" + std::to_string(rows) + ", " + std::to_string(cols) +
                                      "]; every expert must have the same shapes");
      }
    }
  }
}

void describe_shared(const Checkpoint& checkpoint, MoeLayerShape& shape) {
  shape.shared = "none";
  const std::string module = moe_names::shared_module(checkpoint, shape.prefix);
  shape.shared_gate = checkpoint.find(moe_names::shared_gate(shape.prefix)).has_value();
  if (module.empty()) return;
  if (moe_names::is_nvfp4(checkpoint, module + ".gate_proj")) {
    shape.shared = "nvfp4";
    shape.shared_intermediate = load_nvfp4_layer(checkpoint, module + ".gate_proj", false).rows;
  } else {
    const TensorView gate = checkpoint.get(module + ".gate_proj.weight");
    shape.shared = to_string(gate.dtype());
    shape.shared_intermediate = gate.shape().empty() ? 0 : gate.shape()[0];
  }
}

const nlohmann::json* text_model(const nlohmann::json& document) {
  const auto nested = document.find("text_config");
  return nested != document.end() && nested->is_object() ? &*nested : &document;
}

}  // namespace

std::vector<std::string> find_moe_layers(const Checkpoint& checkpoint) {
  std::set<std::string> prefixes;
  for (const std::string& name : checkpoint.tensor_names()) {
    const std::size_t at = name.find(".experts.");
    if (at == std::string::npos) continue;
    // Only NVFP4 experts (found by their global scale): an MoE block left in high precision (an
    // MTP layer, an excluded one) is not an NVFP4 MoE layer.
    const std::string rest = name.substr(at + 9);
    for (const char* marker : {"gate_up_proj_weight_scale_2", "gate_up_proj.weight_scale_2", "0.gate_proj.weight_scale_2",
                               "0.gate_proj.weight_global_scale"})
      if (rest == marker) prefixes.insert(name.substr(0, at));
  }
  return {prefixes.begin(), prefixes.end()};
}

MoeLayerShape describe_moe_layer(const Checkpoint& checkpoint, const std::string& prefix) {
  MoeLayerShape shape;
  shape.prefix = prefix;
  if (moe_names::fused_weight(checkpoint, moe_names::fused(prefix, "gate_up_proj"))) {
    describe_fused(checkpoint, shape);
  } else {
    describe_separate(checkpoint, shape);
  }
  if (shape.experts == 0) {
    throw_io(checkpoint.description() + ": '" + prefix + "' has no experts (no " + moe_names::expert(prefix, 0, "gate_proj") +
             ".* and no " + moe_names::fused(prefix, "gate_up_proj") + "); `fp4gemm inspect` lists the MoE layers");
  }
  shape.router = checkpoint.find(moe_names::router(prefix)).has_value();
  describe_shared(checkpoint, shape);
  return shape;
}

bool default_norm_topk_prob(const std::string& model_type) {
  return model_type != "qwen2_moe" && model_type != "qwen3_moe" && model_type != "olmoe";
}

bool MoeRoutingConfig::norm_topk_prob_or_default() const { return norm_topk_prob.value_or(default_norm_topk_prob(model_type)); }

std::string MoeRoutingConfig::norm_topk_prob_origin() const {
  if (norm_topk_prob) return "config.json";
  return model_type.empty() ? "the default without a model_type" : "the " + model_type + " default";
}

MoeRoutingConfig read_moe_routing_config(const std::filesystem::path& directory) {
  MoeRoutingConfig config;
  const std::filesystem::path path = directory / "config.json";
  const std::optional<std::string> text = read_small_text_file(path);
  if (!text) return config;
  const nlohmann::json document = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (document.is_discarded() || !document.is_object()) throw_io(path.string() + ": is not a JSON object");
  const nlohmann::json& model = *text_model(document);
  if (const auto k = model.find("num_experts_per_tok"); k != model.end() && !k->is_null()) {
    if (!k->is_number_integer() || k->get<std::int64_t>() < 1 || k->get<std::int64_t>() > 1 << 20) {
      throw_io(path.string() + ": \"num_experts_per_tok\" must be a positive integer, not " + k->dump());
    }
    config.num_experts_per_tok = k->get<int>();
  }
  if (const auto norm = model.find("norm_topk_prob"); norm != model.end() && !norm->is_null()) {
    if (!norm->is_boolean()) throw_io(path.string() + ": \"norm_topk_prob\" must be true or false, not " + norm->dump());
    config.norm_topk_prob = norm->get<bool>();
  }
  if (const auto type = model.find("model_type"); type != model.end() && type->is_string()) config.model_type = type->get<std::string>();
  for (const char* key : {"num_experts", "num_local_experts", "n_routed_experts"}) {
    const auto experts = model.find(key);
    if (experts != model.end() && experts->is_number_integer() && experts->get<std::int64_t>() > 0) {
      config.num_experts = experts->get<std::int64_t>();
      break;
    }
  }
  return config;
}

}  // namespace fp4gemm::io
