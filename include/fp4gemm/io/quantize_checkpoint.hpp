#pragma once
// BF16/FP16/FP32 checkpoint -> ModelOpt NVFP4 checkpoint, with fp4gemm::quantize_weight.
#include <set>
#include <string>
#include <vector>

#include "fp4gemm/io/safetensors.hpp"

namespace fp4gemm::io {

// ModelOpt's default NVFP4 config leaves these modules in high precision (embeddings are not
// linear layers; lm_head and MoE routers are excluded by its "*lm_head*", "*router*",
// "*mlp.gate.*" rules). Patterns match module names (tensor name minus ".weight").
inline const std::vector<std::string> kDefaultExcludePatterns = {"*lm_head*", "*embed*", "*router*", "*mlp.gate",
                                                                 "*block_sparse_moe.gate", "*shared_expert_gate"};

struct QuantizeOptions {
  std::vector<std::string> exclude_patterns;  // in addition to the defaults, when used
  bool use_default_excludes = true;
  // Tensor names held by the checkpoint's other shards (or all of its names): a weight whose
  // `.weight_scale` sits in another shard is quantized already and is copied.
  std::set<std::string> sibling_tensors;
};

struct QuantizeDecision {
  std::string name;
  bool quantized = false;
  std::string reason;  // why it was copied as-is, or the shapes it was quantized to
};

struct QuantizeResult {
  std::vector<QuantizeDecision> decisions;  // one per input tensor, in name order
  std::vector<std::string> excluded_modules;  // linear modules left in high precision (sorted)
  std::string hf_quant_config_json;           // ModelOpt's hf_quant_config.json for the output
};

// Quantizes `input` into `out`: a tensor is quantized when it is named *.weight, is 2-D, F32/BF16/
// F16, has K % 16 == 0 and its module is not excluded; it becomes `.weight` U8 [N, K/2],
// `.weight_scale` F8_E4M3 [N, K/16] and `.weight_scale_2` F32 []. Fused expert tensors
// (*.experts.gate_up_proj [E, 2I, H], *.experts.down_proj [E, H, I]) are quantized expert by expert
// into NAME U8 [E, N, K/2], NAME_weight_scale F8_E4M3 [E, N, K/16] and NAME_weight_scale_2 F32 [E]
// (ModelOpt's fused-expert names). An MoE router (PREFIX.gate beside PREFIX.experts.*) and the
// default excludes stay in high precision. Everything else is copied as-is (borrowed from the
// mapping: `input` must outlive out.write()).
QuantizeResult quantize_checkpoint(const SafetensorsFile& input, const QuantizeOptions& options, SafetensorsWriter& out);

// ModelOpt's hf_quant_config.json for an NVFP4 checkpoint that leaves `excluded_modules` in high
// precision.
std::string hf_quant_config_json(const std::vector<std::string>& excluded_modules);

}  // namespace fp4gemm::io
