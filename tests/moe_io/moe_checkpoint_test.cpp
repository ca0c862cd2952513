// Loading MoE layers from checkpoints: per-expert and fused expert tensors, the router, the shared
// expert (NVFP4 and BF16) and its gate, config.json's top-k, and errors that name the tensor.
#include <gtest/gtest.h>

#include <cstring>
#include <map>

#include "fp4gemm/format/half.hpp"
#include "fp4gemm/format/nvfp4_matrix.hpp"
#include "fp4gemm/io/checkpoint_summary.hpp"
#include "fp4gemm/io/moe_checkpoint.hpp"
#include "fp4gemm/io/quantize_checkpoint.hpp"
#include "fp4gemm/io/tensor_convert.hpp"
#include "io/io_test_support.hpp"
#include "moe_io/moe_checkpoint_fixture.hpp"

namespace fp4gemm::io {
namespace {

using testing::fails_with_io_error;
using testing::ScratchDirectory;
using testing::write_text;

constexpr std::int64_t kExperts = 3, kHidden = 64, kInter = 32;

bool same_bytes(const std::uint8_t* a, const std::vector<std::uint8_t>& b) { return std::memcmp(a, b.data(), b.size()) == 0; }

TEST(MoeCheckpoint, PerExpertLayerLoadsEveryProjectionWithItsScales) {
  ScratchDirectory scratch;
  const moe_fixture::MoeFixture fixture(kExperts, kHidden, kInter);
  SafetensorsWriter writer;
  fixture.add_per_expert(writer, "model.layers.0.mlp");
  fixture.add_router(writer, "model.layers.0.mlp");
  writer.write((scratch / "model.safetensors").string());
  write_text(scratch / "config.json", R"({"text_config": {"num_experts_per_tok": 2, "norm_topk_prob": false, "num_experts": 3}})");

  const Checkpoint checkpoint = Checkpoint::open(scratch.path());
  EXPECT_EQ(find_moe_layers(checkpoint), std::vector<std::string>{"model.layers.0.mlp"});
  const MoeLayerTensors layer = load_moe_layer(checkpoint, "model.layers.0.mlp");
  EXPECT_EQ(layer.shape.experts, kExperts);
  EXPECT_EQ(layer.shape.hidden, kHidden);
  EXPECT_EQ(layer.shape.intermediate, kInter);
  EXPECT_EQ(layer.shape.layout, moe::ExpertLayout::separate);
  EXPECT_EQ(layer.routing.num_experts_per_tok, 2);
  EXPECT_EQ(layer.routing.norm_topk_prob, false);
  EXPECT_EQ(layer.routing.num_experts, 3);
  const moe::MoeWeights weights = layer.weights();
  ASSERT_EQ(weights.experts.size(), std::size_t(kExperts));
  for (std::int64_t e = 0; e < kExperts; ++e) {
    const moe::ExpertProjections& expert = weights.experts[std::size_t(e)];
    const moe_fixture::ExpertMatrices& source = fixture.experts[std::size_t(e)];
    EXPECT_TRUE(same_bytes(expert.gate.codes, source.gate.codes)) << e;
    EXPECT_TRUE(same_bytes(expert.up.scales, source.up.scales)) << e;
    EXPECT_TRUE(same_bytes(expert.down.codes, source.down.codes)) << e;
    EXPECT_EQ(expert.gate.global_scale, source.gate.global_scale);
    EXPECT_EQ(expert.down.rows, kHidden);
    EXPECT_EQ(expert.down.cols, kInter);
    // gate's input_scale is 0.5 + e, up's 0.75 + e: the fused GEMM quantizes x with the larger.
    EXPECT_EQ(expert.gate_up_input_scale, 0.75f + float(e));
    EXPECT_EQ(expert.down_input_scale, 2.0f + float(e));
  }
  ASSERT_NE(weights.router.data, nullptr);
  EXPECT_EQ(weights.router.rows, kExperts);
  EXPECT_EQ(weights.router.cols, kHidden);
  EXPECT_EQ(weights.router.dtype, DType::bf16);
  EXPECT_FALSE(weights.shared.has_value());
}

TEST(MoeCheckpoint, FusedLayerSplitsGateAndUpRowsAndTakesPerExpertScales) {
  ScratchDirectory scratch;
  const moe_fixture::MoeFixture fixture(kExperts, kHidden, kInter);
  SafetensorsWriter writer;
  fixture.add_fused(writer, "model.layers.1.mlp", /*gate_up_scale_columns=*/2);
  fixture.add_shared_nvfp4(writer, "model.layers.1.mlp");
  writer.write((scratch / "model.safetensors").string());

  const Checkpoint checkpoint = Checkpoint::open(scratch.path());
  EXPECT_EQ(find_moe_layers(checkpoint), std::vector<std::string>{"model.layers.1.mlp"});
  const MoeLayerTensors layer = load_moe_layer(checkpoint, "model.layers.1.mlp");
  EXPECT_EQ(layer.shape.layout, moe::ExpertLayout::fused_gate_up);
  EXPECT_FALSE(layer.routing.num_experts_per_tok.has_value()) << "no config.json";
  const moe::MoeWeights weights = layer.weights();
  ASSERT_EQ(weights.num_experts(), kExperts);
  EXPECT_EQ(weights.router.data, nullptr);
  for (std::int64_t e = 0; e < kExperts; ++e) {
    const moe::ExpertProjections& expert = weights.experts[std::size_t(e)];
    const moe_fixture::ExpertMatrices& source = fixture.experts[std::size_t(e)];
    EXPECT_TRUE(same_bytes(expert.gate.codes, source.gate.codes)) << e;
    EXPECT_TRUE(same_bytes(expert.up.codes, source.up.codes)) << e;
    EXPECT_TRUE(same_bytes(expert.up.scales, source.up.scales)) << e;
    EXPECT_TRUE(same_bytes(expert.down.scales, source.down.scales)) << e;
    EXPECT_EQ(expert.gate.rows, kInter);
    EXPECT_EQ(expert.gate.codes_size_bytes, kInter * kHidden / 2);
    EXPECT_EQ(expert.gate.global_scale, source.gate.global_scale);
    EXPECT_EQ(expert.up.global_scale, source.up.global_scale);
    EXPECT_EQ(expert.down.global_scale, source.down.global_scale);
    EXPECT_EQ(expert.gate_up_input_scale, 0.75f + float(e));
  }
  ASSERT_TRUE(weights.shared.has_value());
  ASSERT_TRUE(weights.shared->nvfp4.has_value());
  EXPECT_EQ(weights.shared->nvfp4->gate.rows, 2 * kInter);
  EXPECT_EQ(weights.shared->gate.cols, kHidden);
  EXPECT_EQ(layer.shape.shared, "nvfp4");
  EXPECT_EQ(layer.shape.shared_intermediate, 2 * kInter);
}

TEST(MoeCheckpoint, FusedLayerWithOneGlobalScalePerExpertAndADenseSharedExpert) {
  ScratchDirectory scratch;
  const moe_fixture::MoeFixture fixture(kExperts, kHidden, kInter);
  SafetensorsWriter writer;
  fixture.add_fused(writer, "m.mlp", /*gate_up_scale_columns=*/1);
  fixture.add_shared_bf16(writer, "m.mlp");
  writer.write((scratch / "model.safetensors").string());
  const MoeLayerTensors layer = load_moe_layer(Checkpoint::open(scratch.path()), "m.mlp");
  const moe::MoeWeights weights = layer.weights();
  for (std::int64_t e = 0; e < kExperts; ++e) {
    EXPECT_EQ(weights.experts[std::size_t(e)].gate.global_scale, fixture.experts[std::size_t(e)].gate.global_scale);
    EXPECT_EQ(weights.experts[std::size_t(e)].up.global_scale, fixture.experts[std::size_t(e)].gate.global_scale)
        << "one scale per expert covers gate and up";
  }
  ASSERT_TRUE(weights.shared.has_value());
  EXPECT_FALSE(weights.shared->nvfp4.has_value());
  EXPECT_EQ(weights.shared->dense_gate.dtype, DType::bf16);
  EXPECT_EQ(weights.shared->dense_down.rows, kHidden);
  EXPECT_EQ(weights.shared->dense_down.cols, 2 * kInter);
  EXPECT_EQ(weights.shared->gate.data, nullptr) << "this fixture has no shared_expert_gate";
  EXPECT_EQ(layer.shape.shared, "BF16");
}

TEST(MoeCheckpoint, ErrorsNameTheMissingOrBadTensor) {
  ScratchDirectory scratch;
  const moe_fixture::MoeFixture fixture(kExperts, kHidden, kInter);
  {
    SafetensorsWriter writer;
    fixture.add_per_expert(writer, "p", /*skip=*/"p.experts.1.up_proj.weight_scale");
    writer.write((scratch / "a.safetensors").string());
    const Checkpoint checkpoint = Checkpoint::open(scratch / "a.safetensors");
    EXPECT_TRUE(fails_with_io_error([&] { load_moe_layer(checkpoint, "p"); }, {"p.experts.1.up_proj.weight_scale"}));
    EXPECT_TRUE(fails_with_io_error([&] { load_moe_layer(checkpoint, "q"); }, {"'q' has no experts"}));
  }
  {
    SafetensorsWriter writer;
    fixture.add_fused(writer, "p", 2, /*skip=*/"p.experts.down_proj_weight_scale_2");
    writer.write((scratch / "b.safetensors").string());
    EXPECT_TRUE(fails_with_io_error([&] { load_moe_layer(Checkpoint::open(scratch / "b.safetensors"), "p"); },
                                    {"p.experts.down_proj_weight_scale_2", "global scales"}));
  }
  {
    SafetensorsWriter writer;
    fixture.add_fused(writer, "p", 2, "p.experts.gate_up_proj_weight_scale_2");
    const std::vector<float> wrong(std::size_t(kExperts + 1), 1.0f);
    writer.add("p.experts.gate_up_proj_weight_scale_2", TensorDType::f32, {kExperts + 1}, testing::as_f32_bytes(wrong));
    writer.write((scratch / "c.safetensors").string());
    EXPECT_TRUE(fails_with_io_error([&] { load_moe_layer(Checkpoint::open(scratch / "c.safetensors"), "p"); },
                                    {"p.experts.gate_up_proj_weight_scale_2", "[4]", "[E, 2]"}));
  }
  {
    SafetensorsWriter writer;
    fixture.add_fused(writer, "p", 2, "p.experts.down_proj_weight_scale");
    std::vector<std::uint8_t> scales(std::size_t(kExperts * kHidden * kInter / 16), 0x38);
    scales[5] = 0x7F;  // E4M3 NaN
    writer.add("p.experts.down_proj_weight_scale", TensorDType::f8_e4m3, {kExperts, kHidden, kInter / 16}, scales);
    writer.write((scratch / "d.safetensors").string());
    const Checkpoint checkpoint = Checkpoint::open(scratch / "d.safetensors");
    EXPECT_TRUE(fails_with_io_error([&] { load_moe_layer(checkpoint, "p"); }, {"p.experts.down_proj_weight_scale", "NaN"}));
    EXPECT_NO_THROW(load_moe_layer(checkpoint, "p", /*check_block_scales=*/false));
  }
  {
    SafetensorsWriter writer;
    fixture.add_fused(writer, "p", 2, "p.experts.down_proj");
    writer.add("p.experts.down_proj", TensorDType::u8, {kExperts, kHidden, kInter}, std::vector<std::uint8_t>(std::size_t(kExperts * kHidden * kInter)));
    writer.write((scratch / "e.safetensors").string());
    EXPECT_TRUE(fails_with_io_error([&] { load_moe_layer(Checkpoint::open(scratch / "e.safetensors"), "p"); },
                                    {"p.experts.down_proj holds [E, H, I] = [3, 64, 64]", "must agree"}));
  }
  {
    SafetensorsWriter writer;
    fixture.add_per_expert(writer, "p");
    writer.add("p.gate.weight", TensorDType::f32, {kExperts + 1, kHidden},
               testing::as_f32_bytes(std::vector<float>(std::size_t((kExperts + 1) * kHidden))));
    writer.write((scratch / "f.safetensors").string());
    EXPECT_TRUE(fails_with_io_error([&] { load_moe_layer(Checkpoint::open(scratch / "f.safetensors"), "p"); },
                                    {"'p.gate.weight'", "[3, 64]"}));
  }
}

TEST(MoeCheckpoint, ConfigWithABadTopKIsAnError) {
  ScratchDirectory scratch;
  write_text(scratch / "config.json", R"({"num_experts_per_tok": 0})");
  EXPECT_TRUE(fails_with_io_error([&] { read_moe_routing_config(scratch.path()); }, {"num_experts_per_tok", "positive"}));
  write_text(scratch / "config.json", R"({"norm_topk_prob": "yes"})");
  EXPECT_TRUE(fails_with_io_error([&] { read_moe_routing_config(scratch.path()); }, {"norm_topk_prob"}));
}

// Without norm_topk_prob in config.json the model type's transformers default applies.
TEST(MoeCheckpoint, MissingNormTopkProbFollowsTheModelTypesDefault) {
  ScratchDirectory scratch;
  for (const auto& [type, expected] : {std::pair{"qwen3_moe", false}, {"qwen2_moe", false}, {"mixtral", true}, {"qwen3_next", true}}) {
    write_text(scratch / "config.json", std::string(R"({"model_type": ")") + type + R"(", "num_experts_per_tok": 2})");
    const MoeRoutingConfig config = read_moe_routing_config(scratch.path());
    EXPECT_FALSE(config.norm_topk_prob.has_value()) << type;
    EXPECT_EQ(config.norm_topk_prob_or_default(), expected) << type;
    EXPECT_EQ(config.norm_topk_prob_origin(), std::string("the ") + type + " default");
  }
  write_text(scratch / "config.json", R"({"model_type": "qwen3_moe", "norm_topk_prob": true})");
  const MoeRoutingConfig given = read_moe_routing_config(scratch.path());
  EXPECT_TRUE(given.norm_topk_prob_or_default());
  EXPECT_EQ(given.norm_topk_prob_origin(), "config.json");
}

TEST(MoeCheckpoint, SummaryCountsFusedExpertsAsGemmShapes) {
  ScratchDirectory scratch;
  const moe_fixture::MoeFixture fixture(kExperts, kHidden, kInter);
  SafetensorsWriter writer;
  fixture.add_fused(writer, "model.layers.0.mlp", 2);
  fixture.add_router(writer, "model.layers.0.mlp");
  writer.write((scratch / "model.safetensors").string());
  const Checkpoint checkpoint = Checkpoint::open(scratch.path());
  const CheckpointSummary summary = summarize_checkpoint(checkpoint, read_quant_config(checkpoint.directory()));
  EXPECT_EQ(summary.nvfp4_layers, 2 * kExperts) << "gate_up and down of each expert";
  ASSERT_EQ(summary.shapes.size(), 2u);
  EXPECT_EQ(summary.shapes[0].n, kHidden);
  EXPECT_EQ(summary.shapes[0].k, kInter);
  EXPECT_EQ(summary.shapes[0].count, kExperts);
  EXPECT_EQ(summary.shapes[1].n, 2 * kInter);
  EXPECT_EQ(summary.classes.at(TensorClass::routed_experts).nvfp4_layers, 2 * kExperts);
  ASSERT_EQ(summary.moe_layers.size(), 1u);
  EXPECT_EQ(summary.moe_layers[0].experts, kExperts);
  EXPECT_TRUE(summary.moe_layers[0].router);
}

TEST(MoeCheckpoint, QuantizeWritesFusedExpertsExpertByExpertAndKeepsTheRouters) {
  ScratchDirectory scratch;
  const std::int64_t experts = 2, hidden = 32, inter = 16;
  const std::vector<float> gate_up = testing::random_floats(std::size_t(experts * 2 * inter * hidden), 21);
  const std::vector<float> down = testing::random_floats(std::size_t(experts * hidden * inter), 22);
  SafetensorsWriter writer;
  writer.add("model.layers.0.moe.experts.gate_up_proj", TensorDType::bf16, {experts, 2 * inter, hidden},
             float_to_bytes(gate_up, TensorDType::bf16));
  writer.add("model.layers.0.moe.experts.down_proj", TensorDType::f32, {experts, hidden, inter}, testing::as_f32_bytes(down));
  writer.add("model.layers.0.moe.gate.weight", TensorDType::bf16, {experts, hidden},
             float_to_bytes(testing::random_floats(std::size_t(experts * hidden), 23), TensorDType::bf16));
  writer.add("model.layers.0.moe.shared_expert_gate.weight", TensorDType::bf16, {1, hidden},
             float_to_bytes(testing::random_floats(std::size_t(hidden), 24), TensorDType::bf16));
  for (const auto& [name, rows, cols] : {std::tuple{"gate_proj", inter, hidden}, {"up_proj", inter, hidden}, {"down_proj", hidden, inter}}) {
    writer.add(std::string("model.layers.0.moe.shared_expert.") + name + ".weight", TensorDType::bf16, {rows, cols},
               float_to_bytes(testing::random_floats(std::size_t(rows * cols), 25), TensorDType::bf16));
  }
  writer.write((scratch / "in.safetensors").string());

  const SafetensorsFile input = SafetensorsFile::open((scratch / "in.safetensors").string());
  SafetensorsWriter out;
  const QuantizeResult result = quantize_checkpoint(input, {}, out);
  std::filesystem::create_directories(scratch / "out");
  out.write((scratch / "out" / "model.safetensors").string());
  std::map<std::string, QuantizeDecision> decisions;
  for (const QuantizeDecision& decision : result.decisions) decisions[decision.name] = decision;
  EXPECT_TRUE(decisions["model.layers.0.moe.experts.gate_up_proj"].quantized);
  EXPECT_TRUE(decisions["model.layers.0.moe.experts.down_proj"].quantized);
  EXPECT_FALSE(decisions["model.layers.0.moe.gate.weight"].quantized);
  EXPECT_NE(decisions["model.layers.0.moe.gate.weight"].reason.find("router"), std::string::npos);
  EXPECT_FALSE(decisions["model.layers.0.moe.shared_expert_gate.weight"].quantized);

  const Checkpoint checkpoint = Checkpoint::open(scratch / "out");
  EXPECT_EQ(checkpoint.get("model.layers.0.moe.gate.weight").dtype(), TensorDType::bf16);
  const MoeLayerTensors layer = load_moe_layer(checkpoint, "model.layers.0.moe");
  EXPECT_EQ(layer.shape.layout, moe::ExpertLayout::fused_gate_up);
  EXPECT_EQ(layer.shape.experts, experts);
  const moe::MoeWeights weights = layer.weights();
  for (std::int64_t e = 0; e < experts; ++e) {
    // Expert e's [2I, H] gate_up quantized on its own: BF16-rounded input, one global scale.
    std::vector<float> rounded(std::size_t(2 * inter * hidden));
    const std::vector<std::uint8_t> bf16 = float_to_bytes(
        std::vector<float>(gate_up.begin() + e * 2 * inter * hidden, gate_up.begin() + (e + 1) * 2 * inter * hidden), TensorDType::bf16);
    for (std::size_t i = 0; i < rounded.size(); ++i) rounded[i] = bf16_to_float(std::uint16_t(bf16[2 * i] | bf16[2 * i + 1] << 8));
    const Nvfp4Matrix expected = quantize_weight(rounded.data(), 2 * inter, hidden);
    const moe::ExpertProjections& expert = weights.experts[std::size_t(e)];
    EXPECT_EQ(std::memcmp(expert.gate.codes, expected.codes.data(), expected.codes.size()), 0) << e;
    EXPECT_EQ(expert.gate.global_scale, expected.global_scale);
    EXPECT_EQ(expert.up.global_scale, expected.global_scale);
    const Nvfp4Matrix expected_down = quantize_weight(down.data() + e * hidden * inter, hidden, inter);
    EXPECT_EQ(std::memcmp(expert.down.scales, expected_down.scales.data(), expected_down.scales.size()), 0) << e;
  }
  EXPECT_EQ(weights.router.dtype, DType::bf16);
  ASSERT_TRUE(weights.shared.has_value());
  EXPECT_TRUE(weights.shared->nvfp4.has_value()) << "the shared expert is quantized like any linear layer";
  EXPECT_EQ(weights.shared->gate.dtype, DType::bf16);
}

}  // namespace
}  // namespace fp4gemm::io
