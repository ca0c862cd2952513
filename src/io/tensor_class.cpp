// Naming conventions of HF transformer checkpoints, for `fp4gemm inspect`'s per-class totals, and
// the exclude-pattern matching both inspect and quantize use.
#include <cstdlib>

#include "fp4gemm/io/modelopt.hpp"

namespace fp4gemm::io {
namespace {

bool contains(const std::string& text, const char* part) { return text.find(part) != std::string::npos; }

// The index N of "layers.N." (or "h.N.", GPT-2 style) in a name, or -1.
int layer_index(const std::string& name) {
  for (const char* marker : {"layers.", "h."}) {
    std::size_t position = 0;
    while ((position = name.find(marker, position)) != std::string::npos) {
      const bool at_component_start = position == 0 || name[position - 1] == '.';
      position += std::char_traits<char>::length(marker);
      if (!at_component_start || position >= name.size() || !std::isdigit(static_cast<unsigned char>(name[position]))) continue;
      return std::atoi(name.c_str() + position);
    }
  }
  return -1;
}

}  // namespace

bool glob_match(std::string_view pattern, std::string_view text) {
  // Iterative matcher with single-star backtracking: linear in practice, no recursion.
  std::size_t p = 0, t = 0, star = std::string_view::npos, resume = 0;
  while (t < text.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == text[t])) {
      ++p;
      ++t;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      resume = t;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      t = ++resume;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

std::string module_of(const std::string& tensor_name) {
  const std::size_t dot = tensor_name.rfind('.');
  return dot == std::string::npos ? tensor_name : tensor_name.substr(0, dot);
}

bool QuantConfig::excludes(const std::string& module) const {
  for (const std::string& pattern : exclude_modules) {
    if (glob_match(pattern, module)) return true;
    // A pattern naming a parent module excludes its children ("lm_head" for "lm_head"; "model.layers.0.mlp"
    // for "model.layers.0.mlp.down_proj").
    for (std::size_t dot = module.find('.'); dot != std::string::npos; dot = module.find('.', dot + 1))
      if (glob_match(pattern, std::string_view(module).substr(0, dot))) return true;
  }
  return false;
}

const char* to_string(TensorClass tensor_class) {
  switch (tensor_class) {
    case TensorClass::attention: return "attention";
    case TensorClass::dense_mlp: return "dense_mlp";
    case TensorClass::routed_experts: return "routed_experts";
    case TensorClass::shared_experts: return "shared_experts";
    case TensorClass::mtp: return "mtp";
    case TensorClass::excluded: return "excluded";
    case TensorClass::embeddings: return "embeddings_lm_head";
    case TensorClass::other: return "other";
  }
  return "other";
}

TensorClass classify_tensor(const std::string& name, const QuantConfig& config, bool excluded_high_precision_weight) {
  if (contains(name, "embed_tokens") || contains(name, "lm_head") || contains(name, "wte.") || contains(name, "wpe.") ||
      contains(name, "embeddings."))
    return TensorClass::embeddings;
  const int layer = layer_index(name);
  if (contains(name, "mtp") || (config.num_hidden_layers >= 0 && layer >= config.num_hidden_layers)) return TensorClass::mtp;
  if (excluded_high_precision_weight || config.excludes(module_of(name))) return TensorClass::excluded;
  if (contains(name, "shared_expert")) return TensorClass::shared_experts;  // also "shared_experts"
  if (contains(name, ".experts.")) return TensorClass::routed_experts;
  if (contains(name, "self_attn") || contains(name, ".attn.") || contains(name, "attention")) return TensorClass::attention;
  if (contains(name, ".mlp.") || contains(name, "feed_forward") || contains(name, ".ffn.")) return TensorClass::dense_mlp;
  return TensorClass::other;
}

}  // namespace fp4gemm::io
