#pragma once
// The GEMM weight shapes of a model from its Hugging Face config.json alone, so that `fp4gemm tune`
// can tune for a model before its weights are downloaded (hundreds of GB for the large NVFP4 ones).
//
// The shapes are those an inference engine runs (vLLM, SGLang and TensorRT-LLM fuse them so):
// attention q, k and v as one qkv_proj, o_proj (DeepSeek's latent attention: its q_a/q_b,
// kv_a/kv_b and o projections); the MLP's gate and up as one gate_up_proj,
// down_proj (Qwen3-Next and Qwen3.5: q_proj doubled, it also yields their attention's output gate);
// for mixture-of-experts models the same per expert and for shared experts; for
// hybrid models with linear attention (Qwen3-Next, Qwen3.5: Gated DeltaNet), in_proj_qkvz and
// out_proj. With tensor parallelism of `tp` GPUs the column-parallel projections (qkv, gate_up,
// in_proj) keep N / tp rows and the row-parallel ones (o, down, out_proj) K / tp columns, as each
// GPU runs them (latent attention's q_a and kv_a are replicated). Not included: the embedding and lm_head, the MoE router and the linear
// attention's small b/a projections (NVFP4 checkpoints keep them in BF16).
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace fp4gemm::io {

struct ModelGemm {
  std::string layer;  // e.g. "self_attn.qkv_proj", "experts.gate_up_proj"
  std::int64_t n = 0, k = 0;
};

struct ModelGemms {
  std::string model_type;         // config.json's model_type (the text model's, when nested), or empty
  std::vector<ModelGemm> gemms;   // in layer order: attention, linear attention, MLP, experts, shared experts
};

// From config.json's text: the top-level object, or its "text_config" for multimodal models.
// Throws Error(io) naming `where` for text that is not a JSON object, and for a field that is
// present but not a non-negative integer, or missing (or 0) where the shapes need it (hidden_size
// always).
// Throws Error(invalid_argument) when `tp` is below 1 or does not divide a sharded dimension.
ModelGemms gemms_from_config_text(const std::string& text, const std::string& where, int tp = 1);

// From a config.json file, or a directory holding one.
ModelGemms gemms_from_config(const std::filesystem::path& path, int tp = 1);

}  // namespace fp4gemm::io
