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

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() > suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Fused expert weights as Hugging Face stores them: experts.gate_up_proj [E, 2I, H] and
// experts.down_proj [E, H, I], named without ".weight".
bool is_fused_expert_name(const std::string& name) {
  return ends_with(name, ".experts.gate_up_proj") || ends_with(name, ".experts.down_proj");
}

// Whether some name in `names` starts with `prefix`.
bool any_name_starts_with(const std::set<std::string>& names, const std::string& prefix) {
  const auto found = names.lower_bound(prefix);
  return found != names.end() && found->compare(0, prefix.size(), prefix) == 0;
}

// Why a fused 3-D expert tensor stays as it is, or "" when it is quantized expert by expert.
std::string reason_to_copy_fused(const TensorEntry& entry, const QuantConfig& excludes, const std::set<std::string>& names) {
  if (entry.shape.size() != 3) return "fused experts but not 3-D (" + entry.shape_string() + ")";
  if (!is_floating_point(entry.dtype)) return std::string("dtype ") + to_string(entry.dtype) + " is not F32/BF16/F16";
  if (entry.shape[2] % 16 != 0) return "K = " + std::to_string(entry.shape[2]) + " is not a multiple of 16";
  if (entry.shape[0] == 0 || entry.shape[1] == 0 || entry.shape[2] == 0) return "empty";
  if (excludes.excludes(entry.name)) return "excluded by pattern";
  if (names.count(entry.name + "_weight_scale") != 0) return "already has " + entry.name + "_weight_scale";
  return "";
}

// Why `entry` stays as it is, or "" when it is quantized. `names`: every tensor of the checkpoint.
std::string reason_to_copy(const SafetensorsFile& input, const TensorEntry& entry, const QuantConfig& excludes,
                           const std::set<std::string>& sibling_tensors, const std::set<std::string>& names) {
  if (is_fused_expert_name(entry.name)) return reason_to_copy_fused(entry, excludes, names);
  if (!is_weight_name(entry.name)) return "not named *.weight";
  if (entry.shape.size() != 2) return "not 2-D (" + entry.shape_string() + ")";
  if (!is_floating_point(entry.dtype)) return std::string("dtype ") + to_string(entry.dtype) + " is not F32/BF16/F16";
  if (entry.shape[1] % 16 != 0) return "K = " + std::to_string(entry.shape[1]) + " is not a multiple of 16";
  if (entry.shape[0] == 0 || entry.shape[1] == 0) return "empty";
  const std::string module = module_of(entry.name);
  if (excludes.excludes(module)) return "excluded by pattern";
  // The router beside routed experts (PREFIX.gate next to PREFIX.experts.*), whatever the MoE
  // block is called: engines read it in high precision.
  if (ends_with(module, ".gate") && any_name_starts_with(names, module_of(module) + ".experts."))
    return "the MoE router (kept in high precision)";
  for (const char* suffix : {".weight_scale", ".weight_scale_2", ".input_scale"})
    if (input.header().find(module + suffix) != nullptr || sibling_tensors.count(module + suffix) != 0)
      return std::string("already has ") + module + suffix;
  return "";
}

std::vector<std::uint8_t> scalar_bytes(float value) {
  return float_to_bytes({value}, TensorDType::f32);
}

// Quantizes a fused [E, N, K] expert tensor one expert at a time into ModelOpt's fused NVFP4
// tensors: NAME U8 [E, N, K/2], NAME_weight_scale F8_E4M3 [E, N, K/16], NAME_weight_scale_2 F32 [E].
// Returns the decision's reason.
std::string quantize_fused_experts(const SafetensorsFile& input, const TensorEntry& entry, SafetensorsWriter& out) {
  const std::int64_t experts = entry.shape[0], rows = entry.shape[1], cols = entry.shape[2];
  const std::vector<float> values = tensor_to_float(input.view(entry));
  std::vector<std::uint8_t> codes, scales;
  std::vector<float> global_scales;
  codes.reserve(std::size_t(experts * rows * cols / 2));
  scales.reserve(std::size_t(experts * rows * cols / 16));
  for (std::int64_t e = 0; e < experts; ++e) {
    Nvfp4Matrix matrix;
    try {
      matrix = quantize_weight(values.data() + e * rows * cols, rows, cols);
    } catch (const Error& error) {
      throw_io(input.path() + ": expert " + std::to_string(e) + " of tensor '" + entry.name + "' cannot be quantized: " + error.what());
    }
    codes.insert(codes.end(), matrix.codes.begin(), matrix.codes.end());
    scales.insert(scales.end(), matrix.scales.begin(), matrix.scales.end());
    global_scales.push_back(matrix.global_scale);
  }
  out.add(entry.name, TensorDType::u8, {experts, rows, cols / 2}, codes);
  out.add(entry.name + "_weight_scale", TensorDType::f8_e4m3, {experts, rows, cols / 16}, scales);
  out.add(entry.name + "_weight_scale_2", TensorDType::f32, {experts}, float_to_bytes(global_scales, TensorDType::f32));
  const std::string e = std::to_string(experts), n = std::to_string(rows);
  return std::string(to_string(entry.dtype)) + " " + entry.shape_string() + " -> U8 [" + e + ", " + n + ", " +
         std::to_string(cols / 2) + "] + F8_E4M3 [" + e + ", " + n + ", " + std::to_string(cols / 16) + "] + F32 [" + e +
         "], expert by expert";
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

  std::set<std::string> names = options.sibling_tensors;
  for (const TensorEntry& entry : input.tensors()) names.insert(entry.name);

  for (const TensorEntry* entry : entries) {
    const TensorView tensor = input.view(*entry);
    QuantizeDecision decision{entry->name, false, reason_to_copy(input, *entry, excludes, options.sibling_tensors, names)};
    if (!decision.reason.empty()) {
      // A linear weight left in high precision must be listed so loaders do not expect scales.
      if (is_weight_name(entry->name) && entry->shape.size() == 2 && is_floating_point(entry->dtype))
        excluded_modules.insert(module_of(entry->name));
      out.add_borrowed(entry->name, entry->dtype, entry->shape, tensor.bytes());
      result.decisions.push_back(std::move(decision));
      continue;
    }
    if (is_fused_expert_name(entry->name)) {
      decision.reason = quantize_fused_experts(input, *entry, out);
      decision.quantized = true;
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
