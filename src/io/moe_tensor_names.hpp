#pragma once
// Tensor names of an MoE layer, shared by its shape description and its loader.
#include <optional>
#include <string>

#include "fp4gemm/io/checkpoint.hpp"

namespace fp4gemm::io::moe_names {

inline std::string expert(const std::string& prefix, std::int64_t e, const char* projection) {
  return prefix + ".experts." + std::to_string(e) + "." + projection;
}
inline std::string fused(const std::string& prefix, const char* projection) { return prefix + ".experts." + projection; }
inline std::string router(const std::string& prefix) { return prefix + ".gate.weight"; }
inline std::string shared_gate(const std::string& prefix) { return prefix + ".shared_expert_gate.weight"; }

// A fused tensor's companion: `base_suffix` (ModelOpt's fused export, e.g.
// experts.gate_up_proj_weight_scale) or `base.suffix`; empty when neither exists.
inline std::optional<TensorView> fused_companion(const Checkpoint& checkpoint, const std::string& base, const char* suffix) {
  if (auto found = checkpoint.find(base + "_" + suffix)) return found;
  return checkpoint.find(base + "." + suffix);
}

// The fused codes: `base` itself or `base.weight`.
inline std::optional<TensorView> fused_weight(const Checkpoint& checkpoint, const std::string& base) {
  if (auto found = checkpoint.find(base)) return found;
  return checkpoint.find(base + ".weight");
}

// Whether `prefix.gate_proj` is an NVFP4 layer (ModelOpt or compressed-tensors names).
inline bool is_nvfp4(const Checkpoint& checkpoint, const std::string& module) {
  return checkpoint.find(module + ".weight_scale_2").has_value() || checkpoint.find(module + ".weight_global_scale").has_value();
}

// The shared expert's module: PREFIX.shared_expert (Qwen) or PREFIX.shared_experts (DeepSeek);
// empty when the layer has neither.
inline std::string shared_module(const Checkpoint& checkpoint, const std::string& prefix) {
  for (const char* name : {".shared_expert", ".shared_experts"}) {
    const std::string module = prefix + name;
    if (is_nvfp4(checkpoint, module + ".gate_proj") || checkpoint.find(module + ".gate_proj.weight")) return module;
  }
  return "";
}

}  // namespace fp4gemm::io::moe_names
