// quantize_checkpoint_directory: a sharded checkpoint quantizes shard by shard into a directory that
// opens as one checkpoint again (its index agreeing with its shards), with one quant config, the
// loader's other files copied, and the same layers a single-file quantize gives; bad output
// directories are refused before anything is written.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include <nlohmann/json.hpp>

#include "fp4gemm/format/nvfp4_matrix.hpp"
#include "fp4gemm/io/modelopt.hpp"
#include "fp4gemm/io/quantize_directory.hpp"
#include "io/io_test_support.hpp"

namespace fp4gemm::io {
namespace {

using testing::as_f32_bytes;
using testing::random_floats;
using testing::ScratchDirectory;

std::string read_text(const std::filesystem::path& path) { return *read_small_text_file(path); }

// Fails the test unless `call` throws Error(invalid_argument) whose message contains `needle`.
void expect_invalid(const std::function<void()>& call, const std::string& needle) {
  try {
    call();
    ADD_FAILURE() << "did not throw";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::invalid_argument) << error.what();
    EXPECT_NE(std::string(error.what()).find(needle), std::string::npos) << error.what();
  }
}

class QuantizeDirectory : public ::testing::Test {
 protected:
  // Two shards and an index, as Hugging Face saves models: shard 1 holds q_proj and the scale of
  // a weight stored (already quantized elsewhere) in shard 2; shard 2 holds down_proj, the router
  // and that weight. Beside them config.json and tokenizer.json.
  void SetUp() override {
    q_proj = random_floats(64 * 128, 1);
    down_proj = random_floats(32 * 64, 2);
    const std::filesystem::path in = scratch / "in";
    std::filesystem::create_directories(in);
    SafetensorsWriter first, second;
    first.add("model.layers.0.self_attn.q_proj.weight", TensorDType::f32, {64, 128}, as_f32_bytes(q_proj));
    first.add("model.layers.0.input_layernorm.weight", TensorDType::f32, {128}, as_f32_bytes(random_floats(128, 3)));
    first.add("model.layers.1.split.weight_scale", TensorDType::f32, {16, 2}, as_f32_bytes(random_floats(32, 4)));
    second.add("model.layers.0.mlp.down_proj.weight", TensorDType::f32, {32, 64}, as_f32_bytes(down_proj));
    second.add("model.layers.0.mlp.gate.weight", TensorDType::f32, {4, 64}, as_f32_bytes(random_floats(256, 5)));
    second.add("model.layers.1.split.weight", TensorDType::f32, {16, 32}, as_f32_bytes(random_floats(512, 6)));
    first.write((in / "model-00001-of-00002.safetensors").string());
    second.write((in / "model-00002-of-00002.safetensors").string());
    nlohmann::json index;
    index["metadata"] = {{"total_size", 0}};
    index["weight_map"] = {{"model.layers.0.self_attn.q_proj.weight", "model-00001-of-00002.safetensors"},
                           {"model.layers.0.input_layernorm.weight", "model-00001-of-00002.safetensors"},
                           {"model.layers.1.split.weight_scale", "model-00001-of-00002.safetensors"},
                           {"model.layers.0.mlp.down_proj.weight", "model-00002-of-00002.safetensors"},
                           {"model.layers.0.mlp.gate.weight", "model-00002-of-00002.safetensors"},
                           {"model.layers.1.split.weight", "model-00002-of-00002.safetensors"}};
    testing::write_text(in / "model.safetensors.index.json", index.dump());
    testing::write_text(in / "config.json", "{\"architectures\": [\"LlamaForCausalLM\"], \"hidden_size\": 128}\n");
    testing::write_text(in / "tokenizer.json", "{\"version\": \"1.0\"}\n");
    first.write((in / "consolidated.safetensors").string());  // a copy the index does not name
  }

  ScratchDirectory scratch;
  std::vector<float> q_proj, down_proj;
};

TEST_F(QuantizeDirectory, ShardsKeepTheirNamesAndReopenAsOneCheckpoint) {
  const Checkpoint input = Checkpoint::open(scratch / "in");
  const std::filesystem::path out = scratch / "out";
  const QuantizeDirectoryResult result = quantize_checkpoint_directory(input, out, {});

  ASSERT_EQ(result.shards.size(), 2u);
  EXPECT_EQ(result.shards[0].filename(), "model-00001-of-00002.safetensors");
  EXPECT_EQ(result.shards[1].filename(), "model-00002-of-00002.safetensors");
  EXPECT_EQ(result.index, out / "model.safetensors.index.json");
  EXPECT_EQ(result.decisions.size(), 6u);

  std::map<std::string, std::string> reasons;
  std::map<std::string, bool> quantized;
  for (const QuantizeDecision& decision : result.decisions) {
    quantized[decision.name] = decision.quantized;
    reasons[decision.name] = decision.reason;
  }
  EXPECT_TRUE(quantized.at("model.layers.0.self_attn.q_proj.weight"));
  EXPECT_TRUE(quantized.at("model.layers.0.mlp.down_proj.weight"));
  EXPECT_FALSE(quantized.at("model.layers.0.mlp.gate.weight")) << "routers are excluded by default";
  EXPECT_FALSE(quantized.at("model.layers.1.split.weight")) << "its scale sits in the other shard";
  EXPECT_NE(reasons.at("model.layers.1.split.weight").find("already has model.layers.1.split.weight_scale"), std::string::npos)
      << reasons.at("model.layers.1.split.weight");

  // The output opens through its index, which Checkpoint::open checks against every shard.
  const Checkpoint output = Checkpoint::open(out);
  EXPECT_EQ(output.files().size(), 2u);
  EXPECT_EQ(output.tensor_count(), 6u + 2 * 2) << "two quantized layers gained a scale and a global scale each";
  EXPECT_EQ(find_nvfp4_layers(output),
            (std::vector<std::string>{"model.layers.0.mlp.down_proj", "model.layers.0.self_attn.q_proj"}));
  const auto index = nlohmann::json::parse(read_text(result.index));
  std::uint64_t total = 0;
  for (const SafetensorsFile& file : output.files())
    for (const TensorEntry& entry : file.tensors()) total += entry.byte_size();
  EXPECT_EQ(index["metadata"]["total_size"].get<std::uint64_t>(), total);
  EXPECT_EQ(index["weight_map"]["model.layers.0.mlp.down_proj.weight_scale"], "model-00002-of-00002.safetensors");

  // The same layers a single-file quantize gives.
  const Nvfp4Layer down = load_nvfp4_layer(output, "model.layers.0.mlp.down_proj");
  const Nvfp4Matrix expected = quantize_weight(down_proj.data(), 32, 64);
  EXPECT_EQ(down.weight_scale_2, expected.global_scale);
  EXPECT_EQ(std::memcmp(down.weight.data, expected.codes.data(), expected.codes.size()), 0);
  EXPECT_EQ(std::memcmp(down.weight_scale.data, expected.scales.data(), expected.scales.size()), 0);
  const Nvfp4Layer q = load_nvfp4_layer(output, "model.layers.0.self_attn.q_proj");
  const Nvfp4Matrix q_expected = quantize_weight(q_proj.data(), 64, 128);
  EXPECT_EQ(std::memcmp(q.weight.data, q_expected.codes.data(), q_expected.codes.size()), 0);

  // One quant config for all shards; the loader's files copied byte for byte.
  const auto config = nlohmann::json::parse(read_text(result.hf_quant_config));
  EXPECT_EQ(config["quantization"]["quant_algo"], "NVFP4");
  EXPECT_EQ(config["quantization"]["exclude_modules"],
            (nlohmann::json{"model.layers.0.mlp.gate", "model.layers.1.split"}));
  ASSERT_EQ(result.copied.size(), 2u);
  ASSERT_EQ(result.skipped.size(), 1u);
  EXPECT_EQ(result.skipped[0].filename(), "consolidated.safetensors");
  EXPECT_FALSE(std::filesystem::exists(out / "consolidated.safetensors"));
  EXPECT_EQ(read_text(out / "config.json"), read_text(scratch / "in" / "config.json"));
  EXPECT_EQ(read_text(out / "tokenizer.json"), read_text(scratch / "in" / "tokenizer.json"));
}

TEST_F(QuantizeDirectory, OneFileWithoutAnIndexStaysOneFile) {
  const std::filesystem::path single = scratch / "single";
  std::filesystem::create_directories(single);
  SafetensorsWriter writer;
  writer.add("proj.weight", TensorDType::f32, {16, 32}, as_f32_bytes(random_floats(512, 7)));
  writer.write((single / "model.safetensors").string());
  testing::write_text(single / "config.json", "{}\n");

  const QuantizeDirectoryResult result = quantize_checkpoint_directory(Checkpoint::open(single), scratch / "out", {});
  ASSERT_EQ(result.shards.size(), 1u);
  EXPECT_EQ(result.shards[0].filename(), "model.safetensors");
  EXPECT_TRUE(result.index.empty());
  EXPECT_FALSE(std::filesystem::exists(scratch / "out" / "model.safetensors.index.json"));
  EXPECT_TRUE(std::filesystem::exists(scratch / "out" / "hf_quant_config.json"));
  EXPECT_TRUE(std::filesystem::exists(scratch / "out" / "config.json"));
  EXPECT_EQ(find_nvfp4_layers(Checkpoint::open(scratch / "out")), (std::vector<std::string>{"proj"}));
}

TEST_F(QuantizeDirectory, RefusesTheInputDirectoryAndOneHoldingShards) {
  const Checkpoint input = Checkpoint::open(scratch / "in");
  expect_invalid([&] { quantize_checkpoint_directory(input, scratch / "in", {}); }, "is the input's");
  const std::filesystem::path stale = scratch / "stale";
  std::filesystem::create_directories(stale);
  testing::write_text(stale / "model-00009-of-00009.safetensors", "old");
  expect_invalid([&] { quantize_checkpoint_directory(input, stale, {}); }, "already holds model-00009-of-00009.safetensors");
  EXPECT_FALSE(std::filesystem::exists(stale / "hf_quant_config.json")) << "nothing is written before the refusal";
}

}  // namespace
}  // namespace fp4gemm::io
