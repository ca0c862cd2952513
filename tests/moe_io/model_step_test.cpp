// A model's decode step from config.json: layer counts per GEMM shape and the MoE layer per GPU.
#include <gtest/gtest.h>

#include <map>

#include "fp4gemm/error.hpp"
#include "fp4gemm/io/model_step.hpp"

namespace fp4gemm::io {
namespace {

const std::filesystem::path kModels = std::filesystem::path(FP4GEMM_TEST_DATA_DIR) / "models";

std::map<std::string, StepGemm> by_layer(const ModelStep& step) {
  std::map<std::string, StepGemm> gemms;
  for (const StepGemm& gemm : step.gemms) gemms[gemm.gemm.layer] = gemm;
  return gemms;
}

TEST(ModelStep, Qwen35LikeHybridMoeCountsEachLayerKind) {
  const ModelStep step = step_from_config(kModels / "qwen3_5_moe_397b_like.json");
  EXPECT_EQ(step.layers, 60);
  const auto gemms = by_layer(step);
  EXPECT_EQ(gemms.at("self_attn.qkv_proj").count, 15) << "one full-attention layer in 4";
  EXPECT_EQ(gemms.at("self_attn.qkv_proj").gemm.n, 32 * 256 * 2 + 2 * 2 * 256) << "q doubled by the output gate";
  EXPECT_EQ(gemms.at("linear_attn.in_proj_qkvz").count, 45);
  EXPECT_EQ(gemms.at("shared_expert.gate_up_proj").count, 60);
  EXPECT_EQ(gemms.at("shared_expert.gate_up_proj").kind, "shared expert");
  EXPECT_EQ(gemms.count("experts.gate_up_proj"), 0u) << "the routed experts are the MoE layer, not GEMMs";
  ASSERT_TRUE(step.moe.has_value());
  EXPECT_EQ(step.moe->experts, 512);
  EXPECT_EQ(step.moe->top_k, 10);
  EXPECT_EQ(step.moe->hidden, 4096);
  EXPECT_EQ(step.moe->intermediate, 1024);
  EXPECT_EQ(step.moe->count, 60);
}

TEST(ModelStep, TensorParallelSplitsTheExpertsExpertParallelSplitsTheirCount) {
  const ModelStep tp = step_from_config(kModels / "qwen3_5_moe_397b_like.json", 8, 1);
  EXPECT_EQ(tp.moe->experts, 512);
  EXPECT_EQ(tp.moe->intermediate, 128);
  EXPECT_EQ(by_layer(tp).at("self_attn.o_proj").gemm.k, 32 * 256 / 8);
  const ModelStep ep = step_from_config(kModels / "qwen3_5_moe_397b_like.json", 8, 8);
  EXPECT_EQ(ep.moe->experts, 64);
  EXPECT_EQ(ep.moe->intermediate, 1024);
  EXPECT_EQ(ep.moe->top_k, 2) << "10 of 512 experts over 8 GPUs: 1.25 per GPU on average, rounded up";
  EXPECT_THROW(step_from_config(kModels / "qwen3_5_moe_397b_like.json", 1, 3), Error);
  EXPECT_THROW(step_from_config(kModels / "qwen3_5_moe_397b_like.json", 1, 0), Error);
}

TEST(ModelStep, DenseModelAndLayerTypes) {
  const ModelStep dense = step_from_config_text(
      R"({"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 3, "num_attention_heads": 4})", "dense", 1, 1);
  EXPECT_FALSE(dense.moe.has_value());
  EXPECT_EQ(by_layer(dense).at("mlp.gate_up_proj").count, 3);
  EXPECT_EQ(by_layer(dense).at("self_attn.qkv_proj").count, 3);
  const ModelStep typed = step_from_config(kModels / "tiny_moe.json");
  EXPECT_EQ(by_layer(typed).at("self_attn.qkv_proj").count, 2);
  EXPECT_EQ(typed.moe->count, 4);
  try {
    step_from_config_text(R"({"hidden_size": 64, "intermediate_size": 128})", "no-layers.json", 1, 1);
    FAIL() << "a config without num_hidden_layers must be refused";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("num_hidden_layers"), std::string::npos) << error.what();
  }
}

}  // namespace
}  // namespace fp4gemm::io
