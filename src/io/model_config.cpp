#include "fp4gemm/io/model_config.hpp"

#include <nlohmann/json.hpp>

#include "fp4gemm/error.hpp"
#include "fp4gemm/io/checkpoint.hpp"
#include "io/config_fields.hpp"

namespace fp4gemm::io {
namespace {

using nlohmann::json;
using namespace config_fields;

// Qwen3-Next and Qwen3.5 gate their attention output with a sigmoid their q_proj also yields,
// doubling its rows; their configs may not say so, `attn_output_gate` decides where present.
bool gated_attention(const json& text, const std::string& model_type) {
  const auto found = text.find("attn_output_gate");
  if (found != text.end() && found->is_boolean()) return found->get<bool>();
  return model_type.rfind("qwen3_next", 0) == 0 || model_type.rfind("qwen3_5", 0) == 0;
}

// Whether some layers keep a dense MLP beside the experts: DeepSeek's first_k_dense_replace,
// Qwen-MoE's mlp_only_layers or a decoder_sparse_step above 1.
bool has_dense_layers(const json& text, const std::string& where) {
  if (size_field(text, "first_k_dense_replace", where) > 0) return true;
  if (size_field(text, "decoder_sparse_step", where) > 1) return true;
  const auto only = text.find("mlp_only_layers");
  return only != text.end() && only->is_array() && !only->empty();
}

class ShapeList {
 public:
  ShapeList(int tp, std::string where) : tp_(tp), where_(std::move(where)) {}
  // Column-parallel: each GPU holds n / tp output rows.
  void column(const std::string& layer, std::int64_t n, std::int64_t k) { gemms_.push_back({layer, shard(layer, n, "N"), k}); }
  // Row-parallel: each GPU holds k / tp input columns.
  void row(const std::string& layer, std::int64_t n, std::int64_t k) { gemms_.push_back({layer, n, shard(layer, k, "K")}); }
  // Replicated: each GPU holds all of it.
  void whole(const std::string& layer, std::int64_t n, std::int64_t k) { gemms_.push_back({layer, n, k}); }
  std::vector<ModelGemm> take() { return std::move(gemms_); }

 private:
  std::int64_t shard(const std::string& layer, std::int64_t size, const char* dimension) const {
    if (size % tp_ != 0) {
      throw_invalid(where_ + ": " + layer + "'s " + dimension + " = " + std::to_string(size) + " does not split over " +
                    std::to_string(tp_) + " GPUs (--tp)");
    }
    return size / tp_;
  }
  int tp_;
  std::string where_;
  std::vector<ModelGemm> gemms_;
};

// DeepSeek's multi-head latent attention: queries and keys/values through low-rank projections.
void add_latent_attention(const json& text, std::int64_t hidden, std::int64_t heads, std::int64_t kv_rank, const std::string& where,
                          ShapeList& shapes) {
  const std::string why = "latent attention's projections need";
  const std::int64_t nope = required_field(text, "qk_nope_head_dim", where, why);
  const std::int64_t rope = required_field(text, "qk_rope_head_dim", where, why);
  const std::int64_t value = required_field(text, "v_head_dim", where, why);
  if (const std::int64_t q_rank = size_field(text, "q_lora_rank", where)) {
    shapes.whole("self_attn.q_a_proj", q_rank, hidden);
    shapes.column("self_attn.q_b_proj", heads * (nope + rope), q_rank);
  } else {
    shapes.column("self_attn.q_proj", heads * (nope + rope), hidden);
  }
  shapes.whole("self_attn.kv_a_proj_with_mqa", kv_rank + rope, hidden);
  shapes.column("self_attn.kv_b_proj", heads * (nope + value), kv_rank);
  shapes.row("self_attn.o_proj", hidden, heads * value);
}

void add_attention(const json& text, std::int64_t hidden, const std::string& model_type, const std::string& where, ShapeList& shapes) {
  const std::int64_t heads = size_field(text, "num_attention_heads", where);
  if (heads == 0) return;  // e.g. an MLP-only test config
  if (const std::int64_t kv_rank = size_field(text, "kv_lora_rank", where)) {
    add_latent_attention(text, hidden, heads, kv_rank, where, shapes);
    return;
  }
  const std::int64_t kv_heads = size_field(text, "num_key_value_heads", where);
  std::int64_t head_dim = size_field(text, "head_dim", where);
  if (head_dim == 0) {
    if (hidden % heads != 0) throw_config(where, "has no \"head_dim\" and hidden_size is not a multiple of num_attention_heads");
    head_dim = hidden / heads;
  }
  const std::int64_t q_rows = heads * head_dim * (gated_attention(text, model_type) ? 2 : 1);
  const std::int64_t kv_rows = (kv_heads == 0 ? heads : kv_heads) * head_dim;
  shapes.column("self_attn.qkv_proj", q_rows + 2 * kv_rows, hidden);
  shapes.row("self_attn.o_proj", hidden, heads * head_dim);
}

// Gated DeltaNet (Qwen3-Next, Qwen3.5): in_proj_qkvz makes q and k (key heads) and v and z (value
// heads); out_proj maps the value heads back.
void add_linear_attention(const json& text, std::int64_t hidden, const std::string& where, ShapeList& shapes) {
  const std::int64_t key_heads = size_field(text, "linear_num_key_heads", where);
  const std::int64_t value_heads = size_field(text, "linear_num_value_heads", where);
  if (key_heads == 0 || value_heads == 0) return;
  const std::int64_t key_dim =
      key_heads * required_field(text, "linear_key_head_dim", where, "linear attention's projections need");
  const std::int64_t value_dim =
      value_heads * required_field(text, "linear_value_head_dim", where, "linear attention's projections need");
  shapes.column("linear_attn.in_proj_qkvz", 2 * key_dim + 2 * value_dim, hidden);
  shapes.row("linear_attn.out_proj", hidden, value_dim);
}

void add_mlp(const std::string& prefix, std::int64_t intermediate, std::int64_t hidden, ShapeList& shapes) {
  shapes.column(prefix + ".gate_up_proj", 2 * intermediate, hidden);
  shapes.row(prefix + ".down_proj", hidden, intermediate);
}

void add_feed_forward(const json& text, std::int64_t hidden, const std::string& where, ShapeList& shapes) {
  const std::int64_t intermediate = size_field(text, "intermediate_size", where);
  const std::int64_t experts = first_field(text, {"num_experts", "num_local_experts", "n_routed_experts"}, where);
  if (experts == 0) {
    if (intermediate == 0) throw_config(where, "has neither \"intermediate_size\" nor experts: no MLP shape to derive");
    add_mlp("mlp", intermediate, hidden, shapes);
    return;
  }
  const std::int64_t moe_intermediate = size_field(text, "moe_intermediate_size", where);
  if (moe_intermediate == 0 && intermediate == 0) {
    throw_config(where, "has experts but neither \"moe_intermediate_size\" nor \"intermediate_size\"");
  }
  // Mixtral states the expert size as intermediate_size; Qwen-MoE and DeepSeek as moe_intermediate_size.
  const std::int64_t expert_intermediate = moe_intermediate != 0 ? moe_intermediate : intermediate;
  if (moe_intermediate != 0 && intermediate != 0 && has_dense_layers(text, where)) add_mlp("mlp", intermediate, hidden, shapes);
  add_mlp("experts", expert_intermediate, hidden, shapes);
  if (const std::int64_t shared = size_field(text, "shared_expert_intermediate_size", where)) {
    add_mlp("shared_expert", shared, hidden, shapes);
  } else if (const std::int64_t shared_experts = size_field(text, "n_shared_experts", where)) {
    add_mlp("shared_experts", shared_experts * expert_intermediate, hidden, shapes);  // DeepSeek: fused into one MLP
  }
}

}  // namespace

ModelGemms gemms_from_config_text(const std::string& text, const std::string& where, int tp) {
  if (tp < 1) throw_invalid("--tp must be 1 or more, not " + std::to_string(tp));
  const json document = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (document.is_discarded() || !document.is_object()) throw_config(where, "is not a JSON object");
  const auto nested = document.find("text_config");
  const json& model = nested != document.end() && nested->is_object() ? *nested : document;
  ModelGemms result;
  for (const json* source : {&model, &document}) {
    const auto type = source->find("model_type");
    if (type != source->end() && type->is_string()) {
      result.model_type = type->get<std::string>();
      break;
    }
  }
  const std::int64_t hidden = required_field(model, "hidden_size", where, "every projection's shape needs");
  ShapeList shapes(tp, where);
  add_attention(model, hidden, result.model_type, where, shapes);
  add_linear_attention(model, hidden, where, shapes);
  add_feed_forward(model, hidden, where, shapes);
  result.gemms = shapes.take();
  return result;
}

ModelGemms gemms_from_config(const std::filesystem::path& path, int tp) {
  const std::filesystem::path file = std::filesystem::is_directory(path) ? path / "config.json" : path;
  const std::optional<std::string> text = read_small_text_file(file);
  if (!text) throw Error(ErrorCode::io, file.string() + ": no such file (give a model's config.json or its directory)");
  return gemms_from_config_text(*text, file.string(), tp);
}

}  // namespace fp4gemm::io
