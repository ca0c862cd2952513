// The quantization config of a checkpoint: hf_quant_config.json (ModelOpt's own file) or the
// quantization_config object inside config.json (ModelOpt's newer exports, compressed-tensors).
#include <nlohmann/json.hpp>

#include "fp4gemm/io/modelopt.hpp"

namespace fp4gemm::io {
namespace {

using nlohmann::json;

json parse_config(const std::filesystem::path& path, const std::string& text) {
  json document = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (document.is_discarded() || !document.is_object()) {
    throw_io(path.string() + ": is not a JSON object; fix or remove the file");
  }
  return document;
}

std::string string_field(const json& object, const char* key) {
  const auto found = object.find(key);
  return found != object.end() && found->is_string() ? found->get<std::string>() : std::string();
}

void read_excludes(const json& object, const std::filesystem::path& path, QuantConfig& config) {
  for (const char* key : {"exclude_modules", "ignore"}) {
    const auto found = object.find(key);
    if (found == object.end() || found->is_null()) continue;
    if (!found->is_array()) throw_io(path.string() + ": \"" + key + "\" must be a list of module names");
    for (const json& pattern : *found) {
      if (!pattern.is_string()) throw_io(path.string() + ": \"" + key + "\" holds an entry that is not a string");
      config.exclude_modules.push_back(pattern.get<std::string>());
    }
  }
}

// compressed-tensors nests the group size under config_groups.<name>.weights.group_size.
void read_compressed_tensors_groups(const json& quantization, QuantConfig& config) {
  const auto groups = quantization.find("config_groups");
  if (groups == quantization.end() || !groups->is_object()) return;
  for (const auto& [name, group] : groups->items()) {
    if (!group.is_object() || !group.contains("weights") || !group["weights"].is_object()) continue;
    const json& weights = group["weights"];
    if (weights.contains("group_size") && weights["group_size"].is_number_integer()) config.group_size = weights["group_size"].get<int>();
  }
}

void read_quantization(const json& quantization, const std::filesystem::path& path, QuantConfig& config) {
  if (!quantization.is_object()) throw_io(path.string() + ": the quantization section is not a JSON object");
  config.found = true;
  config.quant_method = string_field(quantization, "quant_method");
  config.quant_algo = string_field(quantization, "quant_algo");
  if (config.quant_algo.empty()) config.quant_algo = string_field(quantization, "format");  // compressed-tensors
  if (quantization.contains("group_size")) {
    if (!quantization["group_size"].is_number_integer()) throw_io(path.string() + ": \"group_size\" is not an integer");
    config.group_size = quantization["group_size"].get<int>();
  }
  read_compressed_tensors_groups(quantization, config);
  read_excludes(quantization, path, config);
}

}  // namespace

QuantConfig read_quant_config(const std::filesystem::path& directory) {
  QuantConfig config;
  const auto model_config_path = directory / "config.json";
  const auto model_config_text = read_small_text_file(model_config_path);
  json model_config;
  if (model_config_text) {
    model_config = parse_config(model_config_path, *model_config_text);
    if (model_config.contains("num_hidden_layers") && model_config["num_hidden_layers"].is_number_integer())
      config.num_hidden_layers = model_config["num_hidden_layers"].get<int>();
  }

  const auto hf_quant_path = directory / "hf_quant_config.json";
  if (const auto text = read_small_text_file(hf_quant_path)) {
    const json document = parse_config(hf_quant_path, *text);
    // ModelOpt writes {"producer": ..., "quantization": {...}}; accept the flat form too.
    read_quantization(document.contains("quantization") ? document["quantization"] : document, hf_quant_path, config);
    config.source = "hf_quant_config.json";
    if (config.quant_method.empty()) config.quant_method = "modelopt";
    return config;
  }
  if (model_config_text && model_config.contains("quantization_config")) {
    read_quantization(model_config["quantization_config"], model_config_path, config);
    config.source = "config.json:quantization_config";
  }
  return config;
}

}  // namespace fp4gemm::io
