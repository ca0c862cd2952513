// quantize_checkpoint: which tensors are quantized, that the output loads back as NVFP4 layers
// equal to quantize_weight's, and that everything else is copied byte for byte.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include <nlohmann/json.hpp>

#include "fp4gemm/format/half.hpp"
#include "fp4gemm/format/nvfp4_matrix.hpp"
#include "fp4gemm/io/checkpoint_summary.hpp"
#include "fp4gemm/io/quantize_checkpoint.hpp"
#include "io/io_test_support.hpp"

namespace fp4gemm::io {
namespace {

using testing::as_f32_bytes;
using testing::random_floats;
using testing::ScratchDirectory;

std::vector<std::uint8_t> as_bf16_bytes(const std::vector<float>& values) {
  std::vector<std::uint8_t> bytes(values.size() * 2);
  for (std::size_t i = 0; i < values.size(); ++i) {
    const std::uint16_t bits = float_to_bf16(values[i]);
    std::memcpy(bytes.data() + 2 * i, &bits, 2);
  }
  return bytes;
}

class QuantizeCheckpoint : public ::testing::Test {
 protected:
  void SetUp() override {
    q_proj = random_floats(64 * 128, 1);
    down_proj = random_floats(32 * 64, 2);
    SafetensorsWriter writer;
    writer.add("model.layers.0.self_attn.q_proj.weight", TensorDType::bf16, {64, 128}, as_bf16_bytes(q_proj));
    writer.add("model.layers.0.mlp.down_proj.weight", TensorDType::f32, {32, 64}, as_f32_bytes(down_proj));
    writer.add("model.layers.0.mlp.gate.weight", TensorDType::bf16, {4, 64}, as_bf16_bytes(random_floats(256, 3)));
    writer.add("model.layers.0.mlp.up_proj.weight", TensorDType::f32, {16, 64}, as_f32_bytes(random_floats(1024, 4)));
    writer.add("model.layers.0.input_layernorm.weight", TensorDType::bf16, {128}, as_bf16_bytes(random_floats(128, 5)));
    writer.add("model.embed_tokens.weight", TensorDType::bf16, {10, 128}, as_bf16_bytes(random_floats(1280, 6)));
    writer.add("odd_k.weight", TensorDType::f32, {2, 24}, as_f32_bytes(random_floats(48, 7)));
    writer.add("positions", TensorDType::i64, {3}, std::vector<std::uint8_t>(24, 9));
    writer.set_metadata("format", "pt");
    writer.write((scratch / "in.safetensors").string());
  }

  ScratchDirectory scratch;
  std::vector<float> q_proj, down_proj;
};

TEST_F(QuantizeCheckpoint, QuantizesEligibleWeightsAndCopiesTheRest) {
  const SafetensorsFile input = SafetensorsFile::open((scratch / "in.safetensors").string());
  SafetensorsWriter writer;
  QuantizeOptions options;
  options.exclude_patterns = {"*.up_proj"};
  const QuantizeResult result = quantize_checkpoint(input, options, writer);
  writer.write((scratch / "out.safetensors").string());

  std::map<std::string, bool> quantized;
  for (const QuantizeDecision& decision : result.decisions) quantized[decision.name] = decision.quantized;
  EXPECT_TRUE(quantized.at("model.layers.0.self_attn.q_proj.weight"));
  EXPECT_TRUE(quantized.at("model.layers.0.mlp.down_proj.weight"));
  EXPECT_FALSE(quantized.at("model.layers.0.mlp.gate.weight")) << "routers are excluded by default";
  EXPECT_FALSE(quantized.at("model.layers.0.mlp.up_proj.weight")) << "excluded by --exclude";
  EXPECT_FALSE(quantized.at("model.layers.0.input_layernorm.weight")) << "1-D";
  EXPECT_FALSE(quantized.at("model.embed_tokens.weight")) << "embeddings are excluded by default";
  EXPECT_FALSE(quantized.at("odd_k.weight")) << "K % 16 != 0";
  EXPECT_FALSE(quantized.at("positions"));
  EXPECT_EQ(result.excluded_modules, (std::vector<std::string>{"model.embed_tokens", "model.layers.0.mlp.gate",
                                                                "model.layers.0.mlp.up_proj", "odd_k"}));
  const auto config = nlohmann::json::parse(result.hf_quant_config_json);
  EXPECT_EQ(config["quantization"]["quant_algo"], "NVFP4");
  EXPECT_EQ(config["quantization"]["group_size"], 16);
  EXPECT_EQ(config["quantization"]["exclude_modules"].size(), 4u);

  // The output loads as a ModelOpt checkpoint whose layers equal quantize_weight's result.
  const Checkpoint output = Checkpoint::open(scratch / "out.safetensors");
  EXPECT_EQ(find_nvfp4_layers(output), (std::vector<std::string>{"model.layers.0.mlp.down_proj", "model.layers.0.self_attn.q_proj"}));
  const Nvfp4Layer down = load_nvfp4_layer(output, "model.layers.0.mlp.down_proj");
  const Nvfp4Matrix expected = quantize_weight(down_proj.data(), 32, 64);
  EXPECT_EQ(down.weight_scale_2, expected.global_scale);
  EXPECT_EQ(std::memcmp(down.weight.data, expected.codes.data(), expected.codes.size()), 0);
  EXPECT_EQ(std::memcmp(down.weight_scale.data, expected.scales.data(), expected.scales.size()), 0);
  EXPECT_TRUE(down.weight_scale_2 > 0.0f);
  EXPECT_TRUE(output.get("model.layers.0.mlp.down_proj.weight_scale_2").shape().empty());

  const Nvfp4Layer q = load_nvfp4_layer(output, "model.layers.0.self_attn.q_proj");
  std::vector<std::uint16_t> q_bf16(q_proj.size());
  for (std::size_t i = 0; i < q_proj.size(); ++i) q_bf16[i] = float_to_bf16(q_proj[i]);
  const Nvfp4Matrix q_expected = quantize_weight(DenseView{q_bf16.data(), DType::bf16, 64, 128});
  EXPECT_EQ(std::memcmp(q.weight.data, q_expected.codes.data(), q_expected.codes.size()), 0);

  // Copied tensors keep dtype, shape and bytes; metadata is carried over.
  for (const char* name : {"model.layers.0.mlp.up_proj.weight", "positions", "odd_k.weight", "model.embed_tokens.weight"}) {
    const TensorView before = input.get(name), after = output.get(name);
    EXPECT_EQ(after.dtype(), before.dtype()) << name;
    EXPECT_EQ(after.shape(), before.shape()) << name;
    EXPECT_EQ(std::memcmp(after.data, before.data, before.bytes().size()), 0) << name;
  }
  EXPECT_EQ(output.files()[0].header().metadata.at("format"), "pt");
}

TEST_F(QuantizeCheckpoint, SummaryCountsClassesAndShapes) {
  const SafetensorsFile input = SafetensorsFile::open((scratch / "in.safetensors").string());
  SafetensorsWriter writer;
  const QuantizeResult result = quantize_checkpoint(input, {}, writer);
  std::filesystem::create_directories(scratch / "ckpt");
  writer.write((scratch / "ckpt" / "model.safetensors").string());
  testing::write_text(scratch / "ckpt" / "hf_quant_config.json", result.hf_quant_config_json);

  const Checkpoint checkpoint = Checkpoint::open(scratch / "ckpt");
  const QuantConfig config = read_quant_config(checkpoint.directory());
  ASSERT_TRUE(config.found);
  const CheckpointSummary summary = summarize_checkpoint(checkpoint, config);
  EXPECT_EQ(summary.nvfp4_layers, 3);  // q_proj, down_proj, up_proj
  EXPECT_EQ(summary.tensors, 8 + 3 * 2);
  EXPECT_EQ(summary.classes.at(TensorClass::attention).nvfp4_layers, 1);
  EXPECT_EQ(summary.classes.at(TensorClass::attention).tensors, 3);
  EXPECT_EQ(summary.classes.at(TensorClass::dense_mlp).nvfp4_layers, 2);
  EXPECT_EQ(summary.classes.at(TensorClass::excluded).tensors, 2) << "the router and odd_k stay BF16/F32";
  EXPECT_EQ(summary.classes.at(TensorClass::embeddings).tensors, 1);
  ASSERT_EQ(summary.shapes.size(), 3u);
  EXPECT_EQ(summary.shapes[0].n, 16);
  EXPECT_EQ(summary.shapes[0].k, 64);
  EXPECT_EQ(summary.shapes[2].n, 64);
  EXPECT_EQ(summary.shapes[2].k, 128);
  std::int64_t bytes = 0;
  for (const auto& [tensor_class, totals] : summary.classes) bytes += totals.bytes;
  EXPECT_EQ(bytes, summary.bytes);
}

TEST_F(QuantizeCheckpoint, NonFiniteWeightIsAnIoErrorNamingTheTensor) {
  std::vector<float> values(32, 1.0f);
  values[5] = std::numeric_limits<float>::infinity();
  SafetensorsWriter writer;
  writer.add("bad.weight", TensorDType::f32, {2, 16}, as_f32_bytes(values));
  writer.write((scratch / "inf.safetensors").string());
  const SafetensorsFile input = SafetensorsFile::open((scratch / "inf.safetensors").string());
  SafetensorsWriter out;
  EXPECT_TRUE(testing::fails_with_io_error([&] { quantize_checkpoint(input, {}, out); }, {"'bad.weight'", "non-finite"}));
}

}  // namespace
}  // namespace fp4gemm::io
