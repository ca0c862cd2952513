// ModelOpt NVFP4 discovery: quant configs, both tensor conventions, and every malformed layer
// rejected with Error(io) naming the file and tensor.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "fp4gemm/format/half.hpp"
#include "fp4gemm/format/nvfp4_matrix.hpp"
#include "fp4gemm/io/modelopt.hpp"
#include "io/io_test_support.hpp"

namespace fp4gemm::io {
namespace {

using testing::fails_with_io_error;
using testing::ScratchDirectory;
using testing::write_text;

std::vector<std::uint8_t> f32_bytes(float value) {
  std::vector<std::uint8_t> bytes(4);
  std::memcpy(bytes.data(), &value, 4);
  return bytes;
}

Nvfp4Matrix make_weight(std::int64_t rows, std::int64_t cols, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  std::vector<float> values(std::size_t(rows * cols));
  for (float& value : values) value = normal(rng);
  return quantize_weight(values.data(), rows, cols);
}

// Adds one layer in the ModelOpt convention (or compressed-tensors with `reciprocal`).
void add_layer(SafetensorsWriter& writer, const std::string& prefix, const Nvfp4Matrix& weight, bool reciprocal = false,
               float input_scale = 0.5f) {
  const std::int64_t rows = weight.rows, cols = weight.cols;
  writer.add(prefix + (reciprocal ? ".weight_packed" : ".weight"), TensorDType::u8, {rows, cols / 2}, weight.codes);
  writer.add(prefix + ".weight_scale", TensorDType::f8_e4m3, {rows, cols / 16}, weight.scales);
  if (reciprocal) {
    writer.add(prefix + ".weight_global_scale", TensorDType::f32, {1}, f32_bytes(1.0f / weight.global_scale));
    writer.add(prefix + ".input_global_scale", TensorDType::f32, {1}, f32_bytes(1.0f / input_scale));
  } else {
    writer.add(prefix + ".weight_scale_2", TensorDType::f32, {}, f32_bytes(weight.global_scale));
    writer.add(prefix + ".input_scale", TensorDType::f32, {}, f32_bytes(input_scale));
  }
}

TEST(ModelOpt, FindsAndLoadsLayersOfBothConventions) {
  ScratchDirectory scratch;
  const Nvfp4Matrix q = make_weight(32, 64, 1), k = make_weight(16, 64, 2);
  SafetensorsWriter writer;
  add_layer(writer, "model.layers.0.self_attn.q_proj", q);
  add_layer(writer, "model.layers.0.self_attn.k_proj", k, /*reciprocal=*/true, 0.25f);
  writer.add("model.norm.weight", TensorDType::bf16, {64}, std::vector<std::uint8_t>(128, 0));
  writer.write((scratch / "model.safetensors").string());
  const Checkpoint checkpoint = Checkpoint::open(scratch.path());

  EXPECT_EQ(find_nvfp4_layers(checkpoint),
            (std::vector<std::string>{"model.layers.0.self_attn.k_proj", "model.layers.0.self_attn.q_proj"}));
  const Nvfp4Layer modelopt = load_nvfp4_layer(checkpoint, "model.layers.0.self_attn.q_proj");
  EXPECT_EQ(modelopt.convention, Nvfp4Convention::modelopt);
  EXPECT_EQ(modelopt.rows, 32);
  EXPECT_EQ(modelopt.cols, 64);
  EXPECT_EQ(modelopt.weight_scale_2, q.global_scale);
  ASSERT_TRUE(modelopt.input_scale.has_value());
  EXPECT_EQ(*modelopt.input_scale, 0.5f);
  const Nvfp4View view = modelopt.view();
  EXPECT_EQ(std::memcmp(view.codes, q.codes.data(), q.codes.size()), 0);
  EXPECT_EQ(std::memcmp(view.scales, q.scales.data(), q.scales.size()), 0);

  const Nvfp4Layer compressed = load_nvfp4_layer(checkpoint, "model.layers.0.self_attn.k_proj");
  EXPECT_EQ(compressed.convention, Nvfp4Convention::compressed_tensors);
  EXPECT_FLOAT_EQ(compressed.weight_scale_2, k.global_scale) << "weight_global_scale is the reciprocal";
  EXPECT_FLOAT_EQ(*compressed.input_scale, 0.25f) << "input_global_scale is the reciprocal";

  EXPECT_TRUE(fails_with_io_error([&] { load_nvfp4_layer(checkpoint, "model.norm"); }, {"'model.norm' is not an NVFP4 layer"}));
}

TEST(ModelOpt, Bf16WeightScale2IsTolerated) {
  ScratchDirectory scratch;
  const Nvfp4Matrix weight = make_weight(16, 32, 3);
  SafetensorsWriter writer;
  writer.add("o_proj.weight", TensorDType::u8, {16, 16}, weight.codes);
  writer.add("o_proj.weight_scale", TensorDType::f8_e4m3, {16, 2}, weight.scales);
  const std::uint16_t bits = float_to_bf16(0.0078125f);
  writer.add("o_proj.weight_scale_2", TensorDType::bf16, {}, {reinterpret_cast<const std::uint8_t*>(&bits), 2});
  writer.write((scratch / "m.safetensors").string());
  const Nvfp4Layer layer = load_nvfp4_layer(Checkpoint::open(scratch / "m.safetensors"), "o_proj");
  EXPECT_EQ(layer.weight_scale_2, 0.0078125f);
  EXPECT_FALSE(layer.input_scale.has_value());
}

// One layer whose tensors are altered by `mutate` before writing; returns the load error check.
::testing::AssertionResult broken_layer_fails(const std::function<void(Nvfp4Matrix&, SafetensorsWriter&)>& build,
                                              const std::vector<std::string>& needles) {
  ScratchDirectory scratch;
  Nvfp4Matrix weight = make_weight(16, 64, 4);
  SafetensorsWriter writer;
  build(weight, writer);
  const auto path = scratch / "bad.safetensors";
  writer.write(path.string());
  const Checkpoint checkpoint = Checkpoint::open(path);
  std::vector<std::string> all = needles;
  all.push_back(path.string());
  return fails_with_io_error([&] { load_nvfp4_layer(checkpoint, "layer"); }, all);
}

TEST(ModelOpt, MalformedLayersAreIoErrorsNamingTheTensor) {
  EXPECT_TRUE(broken_layer_fails(
      [](Nvfp4Matrix& w, SafetensorsWriter& out) {
        w.scales[37] = 0x7F;  // E4M3 NaN
        add_layer(out, "layer", w);
      },
      {"'layer.weight_scale'", "NaN block scale at row 9, block 1"}));
  EXPECT_TRUE(broken_layer_fails(
      [](Nvfp4Matrix& w, SafetensorsWriter& out) {
        w.scales[0] = 0xFF;  // the other NaN
        add_layer(out, "layer", w);
      },
      {"'layer.weight_scale'", "NaN"}));
  EXPECT_TRUE(broken_layer_fails(
      [](Nvfp4Matrix& w, SafetensorsWriter& out) {
        out.add("layer.weight", TensorDType::u8, {16, 32}, w.codes);
        out.add("layer.weight_scale", TensorDType::f8_e4m3, {16, 2}, std::vector<std::uint8_t>(32, 0x38));
        out.add("layer.weight_scale_2", TensorDType::f32, {}, f32_bytes(1.0f));
      },
      {"'layer.weight_scale'", "needs F8_E4M3 [16, 4]"}));
  EXPECT_TRUE(broken_layer_fails(
      [](Nvfp4Matrix& w, SafetensorsWriter& out) {
        out.add("layer.weight", TensorDType::u8, {16, 32}, w.codes);
        out.add("layer.weight_scale", TensorDType::u8, {16, 4}, w.scales);
        out.add("layer.weight_scale_2", TensorDType::f32, {}, f32_bytes(1.0f));
      },
      {"'layer.weight_scale'", "is U8 [16, 4]"}));
  EXPECT_TRUE(broken_layer_fails(
      [](Nvfp4Matrix& w, SafetensorsWriter& out) {
        out.add("layer.weight", TensorDType::bf16, {16, 16}, w.codes);
        out.add("layer.weight_scale", TensorDType::f8_e4m3, {16, 4}, w.scales);
        out.add("layer.weight_scale_2", TensorDType::f32, {}, f32_bytes(1.0f));
      },
      {"'layer.weight'", "not packed E2M1 codes"}));
  EXPECT_TRUE(broken_layer_fails(
      [](Nvfp4Matrix& w, SafetensorsWriter& out) {
        out.add("layer.weight", TensorDType::u8, {16, 32}, w.codes);
        out.add("layer.weight_scale", TensorDType::f8_e4m3, {16, 4}, w.scales);
        out.add("layer.weight_scale_2", TensorDType::f32, {}, f32_bytes(std::nanf("")));
      },
      {"'layer.weight_scale_2'", "finite scale"}));
  EXPECT_TRUE(broken_layer_fails(
      [](Nvfp4Matrix& w, SafetensorsWriter& out) {
        out.add("layer.weight", TensorDType::u8, {16, 32}, w.codes);
        out.add("layer.weight_scale", TensorDType::f8_e4m3, {16, 4}, w.scales);
        out.add("layer.weight_scale_2", TensorDType::f32, {2}, std::vector<std::uint8_t>(8, 0));
      },
      {"'layer.weight_scale_2'", "not a scalar"}));
  EXPECT_TRUE(broken_layer_fails(
      [](Nvfp4Matrix& w, SafetensorsWriter& out) {
        add_layer(out, "layer", w, false, -1.0f);
      },
      {"'layer.input_scale'", "positive"}));
  EXPECT_TRUE(broken_layer_fails(
      [](Nvfp4Matrix& w, SafetensorsWriter& out) {
        out.add("layer.weight_scale", TensorDType::f8_e4m3, {16, 4}, w.scales);
        out.add("layer.weight_scale_2", TensorDType::f32, {}, f32_bytes(1.0f));
      },
      {"no tensor named 'layer.weight'"}));
  EXPECT_TRUE(broken_layer_fails(
      [](Nvfp4Matrix& w, SafetensorsWriter& out) {
        out.add("layer.weight", TensorDType::u8, {16, 4}, std::vector<std::uint8_t>(64, 0));  // K = 8
        out.add("layer.weight_scale", TensorDType::f8_e4m3, {16, 0}, {});
        out.add("layer.weight_scale_2", TensorDType::f32, {}, f32_bytes(1.0f));
      },
      {"'layer.weight'", "not a multiple of 16"}));
}

TEST(QuantConfigFile, HfQuantConfigJson) {
  ScratchDirectory scratch;
  write_text(scratch / "hf_quant_config.json", R"({"producer": {"name": "modelopt", "version": "0.29.0"},
    "quantization": {"quant_algo": "NVFP4", "kv_cache_quant_algo": null, "group_size": 16,
                     "exclude_modules": ["lm_head", "model.layers.*.mlp.gate"]}})");
  write_text(scratch / "config.json", R"({"num_hidden_layers": 61})");
  const QuantConfig config = read_quant_config(scratch.path());
  EXPECT_TRUE(config.found);
  EXPECT_EQ(config.source, "hf_quant_config.json");
  EXPECT_EQ(config.quant_method, "modelopt");
  EXPECT_EQ(config.quant_algo, "NVFP4");
  EXPECT_EQ(config.group_size, 16);
  EXPECT_EQ(config.num_hidden_layers, 61);
  EXPECT_TRUE(config.excludes("lm_head"));
  EXPECT_TRUE(config.excludes("model.layers.3.mlp.gate"));
  EXPECT_FALSE(config.excludes("model.layers.3.mlp.gate_proj"));
  EXPECT_FALSE(config.excludes("model.layers.3.mlp.down_proj"));
}

TEST(QuantConfigFile, ConfigJsonModelOptAndCompressedTensors) {
  ScratchDirectory scratch;
  write_text(scratch / "config.json", R"({"quantization_config": {"quant_method": "modelopt", "quant_algo": "NVFP4",
    "group_size": 16, "ignore": ["lm_head", "model.layers.0.mlp"]}})");
  QuantConfig config = read_quant_config(scratch.path());
  EXPECT_EQ(config.source, "config.json:quantization_config");
  EXPECT_EQ(config.quant_method, "modelopt");
  EXPECT_TRUE(config.excludes("model.layers.0.mlp.down_proj")) << "a parent module excludes its children";
  EXPECT_FALSE(config.excludes("model.layers.0.mlp_other"));

  write_text(scratch / "config.json", R"({"quantization_config": {"quant_method": "compressed-tensors",
    "format": "nvfp4-pack-quantized", "config_groups": {"group_0": {"targets": ["Linear"],
    "weights": {"num_bits": 4, "type": "float", "group_size": 16}}}, "ignore": ["lm_head"]}})");
  config = read_quant_config(scratch.path());
  EXPECT_EQ(config.quant_method, "compressed-tensors");
  EXPECT_EQ(config.quant_algo, "nvfp4-pack-quantized");
  EXPECT_EQ(config.group_size, 16);
  EXPECT_TRUE(config.excludes("lm_head"));
}

TEST(QuantConfigFile, AbsentAndMalformed) {
  ScratchDirectory scratch;
  EXPECT_FALSE(read_quant_config(scratch.path()).found);
  write_text(scratch / "hf_quant_config.json", "{oops");
  EXPECT_TRUE(fails_with_io_error([&] { read_quant_config(scratch.path()); }, {"hf_quant_config.json", "not a JSON object"}));
  write_text(scratch / "hf_quant_config.json", R"({"quantization": {"exclude_modules": "lm_head"}})");
  EXPECT_TRUE(fails_with_io_error([&] { read_quant_config(scratch.path()); }, {"list of module names"}));
}

TEST(TensorNames, GlobMatch) {
  EXPECT_TRUE(glob_match("*", ""));
  EXPECT_TRUE(glob_match("model.layers.*.mlp.gate", "model.layers.12.mlp.gate"));
  EXPECT_TRUE(glob_match("*lm_head*", "lm_head"));
  EXPECT_TRUE(glob_match("a?c", "abc"));
  EXPECT_FALSE(glob_match("a?c", "ac"));
  EXPECT_FALSE(glob_match("*.gate", "model.gate_proj"));
  EXPECT_TRUE(glob_match("*a*b*c", "xxaxxbxxbxc"));
}

TEST(TensorNames, Classes) {
  QuantConfig config;
  config.num_hidden_layers = 61;
  config.exclude_modules = {"model.layers.*.self_attn.kv_b_proj"};
  EXPECT_EQ(classify_tensor("model.embed_tokens.weight", config, false), TensorClass::embeddings);
  EXPECT_EQ(classify_tensor("lm_head.weight", config, false), TensorClass::embeddings);
  EXPECT_EQ(classify_tensor("model.layers.61.mlp.experts.0.up_proj.weight", config, false), TensorClass::mtp);
  EXPECT_EQ(classify_tensor("mtp.layers.0.ffn.weight", config, false), TensorClass::mtp);
  EXPECT_EQ(classify_tensor("model.layers.3.self_attn.kv_b_proj.weight", config, false), TensorClass::excluded);
  EXPECT_EQ(classify_tensor("model.layers.3.mlp.gate.weight", config, true), TensorClass::excluded);
  EXPECT_EQ(classify_tensor("model.layers.3.mlp.shared_experts.down_proj.weight", config, false), TensorClass::shared_experts);
  EXPECT_EQ(classify_tensor("model.layers.3.mlp.experts.17.down_proj.weight_scale", config, false), TensorClass::routed_experts);
  EXPECT_EQ(classify_tensor("model.layers.3.self_attn.q_proj.weight", config, false), TensorClass::attention);
  EXPECT_EQ(classify_tensor("model.layers.0.mlp.down_proj.input_scale", config, false), TensorClass::dense_mlp);
  EXPECT_EQ(classify_tensor("model.layers.0.input_layernorm.weight", config, false), TensorClass::other);
}

}  // namespace
}  // namespace fp4gemm::io
