// Quantizing a checkpoint directory shard by shard, with the index, the quant config and the
// loader's other files alongside.
#include "fp4gemm/io/quantize_directory.hpp"

#include <set>

#include <nlohmann/json.hpp>

#include "fp4gemm/error.hpp"

namespace fp4gemm::io {
namespace {

namespace fs = std::filesystem;

constexpr const char* kIndexName = "model.safetensors.index.json";
constexpr const char* kQuantConfigName = "hf_quant_config.json";

// The output directory, created; refused when it is the input's or already holds shards.
void prepare_output(const fs::path& input_directory, const fs::path& output_directory) {
  std::error_code error;
  if (fs::exists(output_directory, error) && fs::equivalent(output_directory, input_directory, error)) {
    throw_invalid("the output directory '" + output_directory.string() +
                  "' is the input's: its shards are memory-mapped while the output is written; choose another");
  }
  fs::create_directories(output_directory, error);
  if (error) throw_io("cannot create the output directory '" + output_directory.string() + "': " + error.message());
  for (const auto& entry : fs::directory_iterator(output_directory)) {
    if (entry.is_regular_file() && entry.path().extension() == ".safetensors") {
      throw_invalid("the output directory '" + output_directory.string() + "' already holds " +
                    entry.path().filename().string() + "; choose an empty directory so no stale shard mixes with the new ones");
    }
  }
}

}  // namespace

QuantizeDirectoryResult quantize_checkpoint_directory(const Checkpoint& input, const fs::path& output_directory,
                                                      const QuantizeOptions& options) {
  prepare_output(input.directory(), output_directory);
  // A weight whose scales sit in another shard is quantized already; every name of the checkpoint
  // stands in for "the other shards" (a shard's own names are checked in its header anyway).
  QuantizeOptions shard_options = options;
  for (const std::string& name : input.tensor_names()) shard_options.sibling_tensors.insert(name);
  QuantizeDirectoryResult result;
  std::set<std::string> excluded;
  nlohmann::ordered_json weight_map = nlohmann::ordered_json::object();
  std::uint64_t total_bytes = 0;
  std::set<fs::path> shard_names;
  for (const SafetensorsFile& shard : input.files()) {
    SafetensorsWriter writer;
    QuantizeResult quantized = quantize_checkpoint(shard, shard_options, writer);
    const fs::path shard_name = fs::path(shard.path()).filename();
    shard_names.insert(shard_name);
    const fs::path written = output_directory / shard_name;
    writer.write(written.string());
    // The index names what was written, read back from the file itself.
    const SafetensorsFile check = SafetensorsFile::open(written.string());
    for (const TensorEntry& entry : check.tensors()) {
      weight_map[entry.name] = shard_name.string();
      total_bytes += entry.byte_size();
    }
    excluded.insert(quantized.excluded_modules.begin(), quantized.excluded_modules.end());
    for (QuantizeDecision& decision : quantized.decisions) result.decisions.push_back(std::move(decision));
    result.shards.push_back(written);
  }
  result.excluded_modules.assign(excluded.begin(), excluded.end());

  std::error_code error;
  const bool had_index = fs::exists(input.directory() / kIndexName, error);
  if (input.files().size() > 1 || had_index) {
    nlohmann::ordered_json index;
    index["metadata"] = {{"total_size", total_bytes}};
    index["weight_map"] = std::move(weight_map);
    result.index = output_directory / kIndexName;
    write_text_file(result.index, index.dump(2) + "\n");
  }
  result.hf_quant_config = output_directory / kQuantConfigName;
  write_text_file(result.hf_quant_config, hf_quant_config_json(result.excluded_modules));

  for (const auto& entry : fs::directory_iterator(input.directory())) {
    const fs::path name = entry.path().filename();
    if (!entry.is_regular_file() || shard_names.count(name) != 0) continue;
    if (entry.path().extension() == ".safetensors") {
      result.skipped.push_back(entry.path());
      continue;
    }
    if (name == kIndexName || name == kQuantConfigName) continue;  // written above for the output
    fs::copy_file(entry.path(), output_directory / name, fs::copy_options::overwrite_existing, error);
    if (error) throw_io("cannot copy '" + entry.path().string() + "' to '" + output_directory.string() + "': " + error.message());
    result.copied.push_back(output_directory / name);
  }
  return result;
}

}  // namespace fp4gemm::io
