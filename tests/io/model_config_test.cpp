// The GEMM shapes `fp4gemm tune --config` derives from a model's config.json, checked against the
// published architectures they come from, and its errors.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "fp4gemm/error.hpp"
#include "fp4gemm/io/model_config.hpp"

namespace fp4gemm::io {
namespace {

std::vector<std::string> listed(const ModelGemms& gemms) {
  std::vector<std::string> lines;
  for (const ModelGemm& gemm : gemms.gemms) lines.push_back(gemm.layer + " " + std::to_string(gemm.n) + "x" + std::to_string(gemm.k));
  return lines;
}

// Llama 3 8B: 32 heads of 128, 8 KV heads, a dense MLP of 14336.
constexpr const char* kLlama = R"({"model_type": "llama", "hidden_size": 4096, "num_attention_heads": 32,
  "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 128256})";

TEST(ModelConfig, ADenseModelGivesFusedAttentionAndMlpShapes) {
  const ModelGemms gemms = gemms_from_config_text(kLlama, "config.json");
  EXPECT_EQ(gemms.model_type, "llama");
  EXPECT_EQ(listed(gemms), (std::vector<std::string>{"self_attn.qkv_proj 6144x4096", "self_attn.o_proj 4096x4096",
                                                     "mlp.gate_up_proj 28672x4096", "mlp.down_proj 4096x14336"}));
}

TEST(ModelConfig, TensorParallelismShardsColumnAndRowParallelLayers) {
  EXPECT_EQ(listed(gemms_from_config_text(kLlama, "config.json", 2)),
            (std::vector<std::string>{"self_attn.qkv_proj 3072x4096", "self_attn.o_proj 4096x2048", "mlp.gate_up_proj 14336x4096",
                                      "mlp.down_proj 4096x7168"}));
  EXPECT_THROW(gemms_from_config_text(kLlama, "config.json", 3), Error);  // 6144 splits, 4096 does not
  EXPECT_THROW(gemms_from_config_text(kLlama, "config.json", 0), Error);
}

// Qwen3-30B-A3B: head_dim given (128, not 2048 / 32 = 64), 128 experts of 768, no dense layers.
TEST(ModelConfig, AMixtureOfExpertsModelGivesItsExpertShapes) {
  const ModelGemms gemms = gemms_from_config_text(R"({"model_type": "qwen3_moe", "hidden_size": 2048, "head_dim": 128,
    "num_attention_heads": 32, "num_key_value_heads": 4, "intermediate_size": 6144, "moe_intermediate_size": 768,
    "num_experts": 128, "num_experts_per_tok": 8, "decoder_sparse_step": 1, "mlp_only_layers": []})",
                                                  "config.json");
  EXPECT_EQ(listed(gemms), (std::vector<std::string>{"self_attn.qkv_proj 5120x2048", "self_attn.o_proj 2048x4096",
                                                     "experts.gate_up_proj 1536x2048", "experts.down_proj 2048x768"}));
}

// Qwen3.5-style: the text model nested in text_config, gated attention (q doubled), Gated DeltaNet
// linear attention, experts and a shared expert.
TEST(ModelConfig, AHybridModelNestedInTextConfigGivesEveryProjection) {
  const ModelGemms gemms = gemms_from_config_text(R"({"model_type": "qwen3_5_moe", "vision_config": {"hidden_size": 1152},
    "text_config": {"model_type": "qwen3_5_moe_text", "hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 2,
      "head_dim": 256, "attn_output_gate": true, "linear_num_key_heads": 16, "linear_num_value_heads": 64,
      "linear_key_head_dim": 128, "linear_value_head_dim": 128, "num_experts": 512, "moe_intermediate_size": 1024,
      "shared_expert_intermediate_size": 1024}})",
                                                  "config.json");
  EXPECT_EQ(gemms.model_type, "qwen3_5_moe_text");
  EXPECT_EQ(listed(gemms),
            (std::vector<std::string>{"self_attn.qkv_proj 17408x4096", "self_attn.o_proj 4096x8192", "linear_attn.in_proj_qkvz 20480x4096",
                                      "linear_attn.out_proj 4096x8192", "experts.gate_up_proj 2048x4096", "experts.down_proj 4096x1024",
                                      "shared_expert.gate_up_proj 2048x4096", "shared_expert.down_proj 4096x1024"}));
}

// Qwen3-Next gates its attention output through q_proj whether or not its config says so; a config
// may turn the gate off.
TEST(ModelConfig, QwenNextAttentionIsGatedUnlessTheConfigSaysOtherwise) {
  const std::string base = R"("hidden_size": 2048, "num_attention_heads": 16, "num_key_value_heads": 2, "head_dim": 256,
    "intermediate_size": 5120)";
  EXPECT_EQ(listed(gemms_from_config_text("{\"model_type\": \"qwen3_next\", " + base + "}", "config.json")).front(),
            "self_attn.qkv_proj 9216x2048");  // 2 x 16 x 256 + 2 x 2 x 256
  EXPECT_EQ(listed(gemms_from_config_text("{\"model_type\": \"qwen3_next\", \"attn_output_gate\": false, " + base + "}", "config.json"))
                .front(),
            "self_attn.qkv_proj 5120x2048");
  EXPECT_EQ(listed(gemms_from_config_text("{\"model_type\": \"qwen3\", " + base + "}", "config.json")).front(),
            "self_attn.qkv_proj 5120x2048");
}

// DeepSeek-V3: latent attention, 3 dense layers first, 256 routed experts and one shared.
TEST(ModelConfig, LatentAttentionAndDenseLayersBesideExperts) {
  const ModelGemms gemms = gemms_from_config_text(R"({"model_type": "deepseek_v3", "hidden_size": 7168, "num_attention_heads": 128,
    "num_key_value_heads": 128, "q_lora_rank": 1536, "kv_lora_rank": 512, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64,
    "v_head_dim": 128, "intermediate_size": 18432, "moe_intermediate_size": 2048, "n_routed_experts": 256,
    "n_shared_experts": 1, "first_k_dense_replace": 3})",
                                                  "config.json", 8);
  EXPECT_EQ(listed(gemms),
            (std::vector<std::string>{"self_attn.q_a_proj 1536x7168", "self_attn.q_b_proj 3072x1536", "self_attn.kv_a_proj_with_mqa 576x7168",
                                      "self_attn.kv_b_proj 4096x512", "self_attn.o_proj 7168x2048", "mlp.gate_up_proj 4608x7168",
                                      "mlp.down_proj 7168x2304", "experts.gate_up_proj 512x7168", "experts.down_proj 7168x256",
                                      "shared_experts.gate_up_proj 512x7168", "shared_experts.down_proj 7168x256"}));
}

// Configs write 0 for "none": no dense layers first, no shared experts, no experts at all.
TEST(ModelConfig, ZeroCountsMeanNone) {
  const ModelGemms moe = gemms_from_config_text(R"({"hidden_size": 1024, "intermediate_size": 4096, "moe_intermediate_size": 512,
    "n_routed_experts": 64, "n_shared_experts": 0, "first_k_dense_replace": 0})",
                                                "config.json");
  EXPECT_EQ(listed(moe), (std::vector<std::string>{"experts.gate_up_proj 1024x1024", "experts.down_proj 1024x512"}));
  const ModelGemms dense =
      gemms_from_config_text(R"({"hidden_size": 1024, "intermediate_size": 4096, "num_experts": 0})", "config.json");
  EXPECT_EQ(listed(dense), (std::vector<std::string>{"mlp.gate_up_proj 8192x1024", "mlp.down_proj 1024x4096"}));
}

// Mixtral states its expert size as intermediate_size.
TEST(ModelConfig, MixtralExpertsUseIntermediateSize) {
  const ModelGemms gemms = gemms_from_config_text(R"({"hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 8,
    "intermediate_size": 14336, "num_local_experts": 8})",
                                                  "config.json");
  EXPECT_EQ(gemms.model_type, "");
  EXPECT_EQ(listed(gemms), (std::vector<std::string>{"self_attn.qkv_proj 6144x4096", "self_attn.o_proj 4096x4096",
                                                     "experts.gate_up_proj 28672x4096", "experts.down_proj 4096x14336"}));
}

void expect_io_error(const std::string& text, const std::string& phrase) {
  try {
    gemms_from_config_text(text, "model/config.json");
    ADD_FAILURE() << "no error for " << text;
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::io) << error.what();
    EXPECT_NE(std::string(error.what()).find("model/config.json: " + phrase), std::string::npos) << error.what();
  }
}

TEST(ModelConfig, BadConfigsAreClearErrors) {
  expect_io_error("{\"hidden_size\": 40", "is not a JSON object");
  expect_io_error("[1, 2]", "is not a JSON object");
  expect_io_error(R"({"intermediate_size": 14336})", "has no \"hidden_size\"");
  expect_io_error(R"({"hidden_size": "4096", "intermediate_size": 14336})", "\"hidden_size\" must be a non-negative integer, not \"4096\"");
  expect_io_error(R"({"hidden_size": -1, "intermediate_size": 14336})", "\"hidden_size\" must be a non-negative integer");
  expect_io_error(R"({"hidden_size": 0, "intermediate_size": 14336})", "has no \"hidden_size\" (or 0)");
  expect_io_error(R"({"hidden_size": 4096, "num_attention_heads": 32})", "has neither \"intermediate_size\" nor experts");
  expect_io_error(R"({"hidden_size": 4096, "num_attention_heads": 30, "intermediate_size": 64})", "has no \"head_dim\"");
  expect_io_error(R"({"hidden_size": 4096, "num_experts": 8})", "has experts but neither");
  expect_io_error(R"({"hidden_size": 4096, "intermediate_size": 64, "linear_num_key_heads": 16, "linear_num_value_heads": 32})",
                  "has no \"linear_key_head_dim\"");
}

TEST(ModelConfig, ReadsAFileOrADirectoryHoldingConfigJson) {
  const std::filesystem::path directory = std::filesystem::temp_directory_path() / ("fp4gemm-model-config-" + std::to_string(::getpid()));
  std::filesystem::create_directories(directory);
  std::ofstream(directory / "config.json") << kLlama;
  EXPECT_EQ(gemms_from_config(directory).gemms.size(), 4u);
  EXPECT_EQ(gemms_from_config(directory / "config.json").gemms.size(), 4u);
  std::filesystem::remove(directory / "config.json");
  try {
    gemms_from_config(directory);
    ADD_FAILURE() << "no error for a directory without config.json";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::io);
    EXPECT_NE(std::string(error.what()).find("config.json: no such file"), std::string::npos) << error.what();
  }
  std::filesystem::remove_all(directory);
}

}  // namespace
}  // namespace fp4gemm::io
