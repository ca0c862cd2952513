#pragma once
// Mixture-of-experts layers of a ModelOpt-style NVFP4 checkpoint, loaded as moe::MoeWeights.
//
// A layer is a module PREFIX (e.g. "model.layers.3.mlp") holding, relative to it:
//   experts, one of two layouts:
//     per expert: experts.{e}.{gate_proj,up_proj,down_proj}.{weight,weight_scale,weight_scale_2,input_scale}
//                 (or the compressed-tensors names load_nvfp4_layer accepts), e = 0 .. E-1;
//     fused:      experts.gate_up_proj U8 [E, 2I, H/2] (gate rows first, then up: the Hugging Face
//                 order) and experts.down_proj U8 [E, H, I/2], each with `_weight_scale` F8_E4M3
//                 [E, N, K/16], `_weight_scale_2` ([], [E], or [E, 2] for gate_up: gate's, up's) and
//                 an optional `_input_scale` ([] or [E], or [E, 2]). These are the names ModelOpt's
//                 fused-expert export, vLLM's and TensorRT-LLM's loaders and transformers' NVFP4
//                 converter use (gate_up_proj_weight_scale_2 and so on); the dotted form
//                 experts.gate_up_proj.weight / .weight_scale / ... is accepted too.
//   gate.weight                    the router [E, H], BF16/F16/F32 (optional: routing may be given)
//   shared_expert.{gate_proj,up_proj,down_proj}  NVFP4 or BF16/F16/F32 (optional; also "shared_experts")
//   shared_expert_gate.weight      [1, H] (optional)
// The layer's top-k and norm_topk_prob come from the checkpoint's config.json when it has them.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "fp4gemm/io/checkpoint.hpp"
#include "fp4gemm/moe/moe_layer.hpp"

namespace fp4gemm::io {

// The MoE routing settings of a model's config.json (the top level or its text_config); each
// empty when the file or the key is absent.
struct MoeRoutingConfig {
  std::optional<int> num_experts_per_tok;
  std::optional<bool> norm_topk_prob;
  std::optional<std::int64_t> num_experts;
  std::string model_type;  // "" when absent

  // norm_topk_prob as the model runs it: the config's value, else default_norm_topk_prob.
  bool norm_topk_prob_or_default() const;
  // Where that value comes from, in words ("config.json", "the qwen3_moe default").
  std::string norm_topk_prob_origin() const;
};
// transformers' norm_topk_prob when a config.json leaves it out: false for the model types whose
// config class defaults it to false (Qwen2-MoE, Qwen3-MoE, OLMoE), true otherwise (Mixtral always
// renormalises; Qwen3-Next defaults to true).
bool default_norm_topk_prob(const std::string& model_type);
MoeRoutingConfig read_moe_routing_config(const std::filesystem::path& directory);

// What a layer holds, from tensor shapes alone (for `fp4gemm inspect`; no scale is read).
struct MoeLayerShape {
  std::string prefix;
  std::int64_t experts = 0, hidden = 0, intermediate = 0;
  moe::ExpertLayout layout = moe::ExpertLayout::separate;
  bool router = false;
  std::string shared;  // "none", "nvfp4" or the dense dtype ("BF16", ...)
  std::int64_t shared_intermediate = 0;
  bool shared_gate = false;
};

// Prefixes of every NVFP4 MoE layer (sorted): modules with experts.0.gate_proj.weight_scale_2 (or
// its compressed-tensors name) or experts.gate_up_proj_weight_scale_2 (or .weight_scale_2).
std::vector<std::string> find_moe_layers(const Checkpoint& checkpoint);

// The shapes of one layer; Error(io) naming the tensor when they do not agree.
MoeLayerShape describe_moe_layer(const Checkpoint& checkpoint, const std::string& prefix);

// One loaded layer. Expert codes and block scales are views into the checkpoint's mapping (the
// Checkpoint must outlive this); the router, the shared expert's dense tensors and its gate are
// copied into aligned buffers held here. Copyable: weights() makes views of the current buffers.
class MoeLayerTensors {
 public:
  MoeLayerShape shape;
  MoeRoutingConfig routing;  // from config.json
  // The layer as the MoE API takes it (host memory).
  moe::MoeWeights weights() const;
  std::int64_t expert_bytes() const;  // codes and block scales of every routed expert

 private:
  friend MoeLayerTensors load_moe_layer(const Checkpoint&, const std::string&, bool);
  struct DenseCopy {
    std::vector<std::uint16_t> half;  // BF16 or F16 bits
    std::vector<float> f32;
    DType dtype = DType::f32;
    std::int64_t rows = 0, cols = 0;
    DenseView view() const;
  };
  std::vector<moe::ExpertProjections> experts_;
  std::optional<DenseCopy> router_;
  std::optional<moe::ExpertProjections> shared_nvfp4_;
  std::optional<DenseCopy> shared_gate_proj_, shared_up_proj_, shared_down_proj_;
  std::optional<DenseCopy> shared_gate_;
  bool has_shared_ = false;
};

// Loads and validates one layer: every tensor's dtype and shape, the experts' agreement with each
// other, finite non-negative global scales and (when `check_block_scales`) no NaN or negative
// block scale. Error(io) naming the checkpoint and the missing or bad tensor.
MoeLayerTensors load_moe_layer(const Checkpoint& checkpoint, const std::string& prefix, bool check_block_scales = true);

}  // namespace fp4gemm::io
