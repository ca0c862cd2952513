// Quantizing a high-precision safetensors file into ModelOpt's NVFP4 layout.
#include "fp4gemm/io/quantize_checkpoint.hpp"

#include <algorithm>
#include <set>

#include <nlohmann/json.hpp>

#include "fp4gemm/error.hpp"
#include "fp4gemm/format/nvfp4_matrix.hpp"
#include "fp4gemm/io/modelopt.hpp"
#include "fp4gemm/io/tensor_convert.hpp"

namespace fp4gemm::io {
namespace {

constexpr const char* kWeightSuffix = ".weight";

bool is_weight_name(const std::string& name) {
  const std::size_t length = std::char_traits<char>::length(kWeightSuffix);
  return name.size() > length && name.compare(name.size() - length, length, kWeightSuffix) == 0;
}

// Why `entry` stays as it is, or "" when it is quantized.
std::string reason_to_copy(const SafetensorsFile& input, const TensorEntry& entry, const QuantConfig& excludes,
                           const std::set<std::string>& sibling_tensors) {
  if (!is_weight_name(entry.name)) return "not named *.weight";
  if (entry.shape.size() != 2) return "not 2-D (" + entry.shape_string() + ")";
  if (!is_floating_point(entry.dtype)) return std::string("dtype ") + to_string(entry.dtype) + " is not F32/BF16/F16";
  if (entry.shape[1] % 16 != 0) return "K = " + std::to_string(entry.shape[1]) + " is not a multiple of 16";
  if (entry.shape[0] == 0 || entry.shape[1] == 0) return "empty";
  const std::string module = module_of(entry.name);
  if (excludes.excludes(module)) return "excluded by pattern";
  for (const char* suffix : {".weight_scale", ".weight_scale_2", ".input_scale"})
    if (input.header().find(module + suffix) != nullptr || sibling_tensors.count(module + suffix) != 0)
      return std::string("already has ") + module + suffix;
  return "";
}

std::vector<std::uint8_t> scalar_bytes(float value) {
  return float_to_bytes({value}, TensorDType::f32);
}

}  // namespace

std::string hf_quant_config_json(const std::vector<std::string>& excluded_modules) {
  nlohmann::ordered_json config;
  config["producer"] = {{"name", "fp4gemm"}, {"version", "0.1.0"}};
  config["quantization"] = {{"quant_algo", "NVFP4"},
                            {"kv_cache_quant_algo", nullptr},
                            {"group_size", 16},
                            {"exclude_modules", excluded_modules}};
  return config.dump(4) + "\n";
}

QuantizeResult quantize_checkpoint(const SafetensorsFile& input, const QuantizeOptions& options, SafetensorsWriter& out) {
  QuantConfig excludes;
  if (options.use_default_excludes) excludes.exclude_modules = kDefaultExcludePatterns;
  excludes.exclude_modules.insert(excludes.exclude_modules.end(), options.exclude_patterns.begin(), options.exclude_patterns.end());

  QuantizeResult result;
  std::set<std::string> excluded_modules;
  std::vector<const TensorEntry*> entries;
  for (const TensorEntry& entry : input.tensors()) entries.push_back(&entry);
  std::sort(entries.begin(), entries.end(), [](const TensorEntry* a, const TensorEntry* b) { return a->name < b->name; });

  for (const TensorEntry* entry : entries) {
    const TensorView tensor = input.view(*entry);
    QuantizeDecision decision{entry->name, false, reason_to_copy(input, *entry, excludes, options.sibling_tensors)};
    if (!decision.reason.empty()) {
      // A linear weight left in high precision must be listed so loaders do not expect scales.
      if (is_weight_name(entry->name) && entry->shape.size() == 2 && is_floating_point(entry->dtype))
        excluded_modules.insert(module_of(entry->name));
      out.add_borrowed(entry->name, entry->dtype, entry->shape, tensor.bytes());
      result.decisions.push_back(std::move(decision));
      continue;
    }
    const std::int64_t rows = entry->shape[0], cols = entry->shape[1];
    const std::vector<float> values = tensor_to_float(tensor);
    Nvfp4Matrix matrix;
    try {
      matrix = quantize_weight(values.data(), rows, cols);
    } catch (const Error& error) {
      throw_io(input.path() + ": tensor '" + entry->name + "' cannot be quantized: " + error.what());
    }
    const std::string module = module_of(entry->name);
    out.add(entry->name, TensorDType::u8, {rows, cols / 2}, matrix.codes);
    out.add(module + ".weight_scale", TensorDType::f8_e4m3, {rows, cols / 16}, matrix.scales);
    out.add(module + ".weight_scale_2", TensorDType::f32, {}, scalar_bytes(matrix.global_scale));
    decision.quantized = true;
    decision.reason = std::string(to_string(entry->dtype)) + " " + entry->shape_string() + " -> U8 [" +
                      std::to_string(rows) + ", " + std::to_string(cols / 2) + "] + F8_E4M3 [" + std::to_string(rows) +
                      ", " + std::to_string(cols / 16) + "] + F32 []";
    result.decisions.push_back(std::move(decision));
  }
  // NOTE: transformers refuses safetensors files whose "format" metadata is not a framework name;
  // an input without metadata gets "pt", as torch-saved checkpoints carry.
  out.set_metadata("format", "pt");
  for (const auto& [key, value] : input.header().metadata) out.set_metadata(key, value);
  result.excluded_modules.assign(excluded_modules.begin(), excluded_modules.end());
  result.hf_quant_config_json = hf_quant_config_json(result.excluded_modules);
  return result;
}

}  // namespace fp4gemm::io
