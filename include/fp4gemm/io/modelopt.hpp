#pragma once
// NVFP4 checkpoints as exported by NVIDIA ModelOpt (and the compressed-tensors variant): the
// quantization config, the quantized layers it holds, and their validated NVFP4 views.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "fp4gemm/io/checkpoint.hpp"
#include "fp4gemm/types.hpp"

namespace fp4gemm::io {

// Where the config came from and what it says. `found` is false when neither
// hf_quant_config.json nor a quantization_config in config.json exists.
struct QuantConfig {
  bool found = false;
  std::string source;        // "hf_quant_config.json" or "config.json:quantization_config"
  std::string quant_method;  // "modelopt", "compressed-tensors", ...
  std::string quant_algo;    // "NVFP4" (compressed-tensors: the format, e.g. "nvfp4-pack-quantized")
  int group_size = 16;
  std::vector<std::string> exclude_modules;  // glob patterns ('*' and '?'), module names
  int num_hidden_layers = -1;                // from config.json; layers at or past it are MTP

  // True when `module` (a tensor name without its last component) matches an exclude pattern,
  // either whole or by a prefix that ends at a '.' ("model.layers.0.mlp" excludes its children).
  bool excludes(const std::string& module) const;
};

// Reads hf_quant_config.json, else config.json's quantization_config, from `directory`.
// Malformed JSON is Error(io) naming the file; a config that is not NVFP4 is reported as it is.
QuantConfig read_quant_config(const std::filesystem::path& directory);

// ModelOpt: weight, weight_scale, weight_scale_2, input_scale.
// compressed-tensors: weight_packed, weight_scale, weight_global_scale = 1/weight_scale_2,
// input_global_scale = 1/input_scale (the reciprocal convention).
enum class Nvfp4Convention { modelopt, compressed_tensors };
const char* to_string(Nvfp4Convention convention);

// One quantized linear layer, validated: codes uint8 [N, K/2], block scales float8_e4m3fn
// [N, K/16], global scales finite. Scales are always in ModelOpt's convention here.
struct Nvfp4Layer {
  std::string prefix;
  Nvfp4Convention convention = Nvfp4Convention::modelopt;
  TensorView weight;        // packed codes
  TensorView weight_scale;  // E4M3 block scales, linear layout
  float weight_scale_2 = 1.0f;
  std::optional<float> input_scale;
  std::int64_t rows = 0;  // N
  std::int64_t cols = 0;  // K

  // The weight as the GEMM API takes it (host memory, linear scales, global_scale = weight_scale_2).
  Nvfp4View view() const;
  std::int64_t bytes() const;  // of all its tensors
};

// Prefixes of every NVFP4 layer in the checkpoint (sorted), found by their global-scale tensor.
std::vector<std::string> find_nvfp4_layers(const Checkpoint& checkpoint);

// Loads and validates one layer. Every problem (missing tensor, wrong dtype or shape, NaN or
// negative scale) is Error(io) naming the file and the tensor. `check_block_scales` scans every
// E4M3 scale for NaN (a pass over N*K/16 bytes).
Nvfp4Layer load_nvfp4_layer(const Checkpoint& checkpoint, const std::string& prefix, bool check_block_scales = true);

// Every E4M3 block scale of `scales` (F8_E4M3, any rank, `blocks_per_row` bytes a row) is neither
// NaN nor negative; Error(io) naming the tensor, the row (counted over all leading dimensions) and
// the block otherwise.
void check_block_scale_bytes(const TensorView& scales, std::int64_t blocks_per_row);

// A scalar tensor (shape [] or [1]) of dtype F32, BF16 or F16 as a float; Error(io) otherwise.
float read_scalar(const TensorView& tensor);

// The classes `fp4gemm inspect` reports a checkpoint's tensors in.
enum class TensorClass { attention, dense_mlp, routed_experts, shared_experts, mtp, excluded, embeddings, other };
inline constexpr TensorClass kAllTensorClasses[] = {TensorClass::attention,      TensorClass::dense_mlp,
                                                   TensorClass::routed_experts, TensorClass::shared_experts,
                                                   TensorClass::mtp,            TensorClass::excluded,
                                                   TensorClass::embeddings,     TensorClass::other};
const char* to_string(TensorClass tensor_class);

// Classifies one tensor by its name. First match wins: embeddings/lm_head; MTP (a name with
// "mtp" or a layer index >= num_hidden_layers); excluded (a 2-D *.weight of a module the config
// excludes, or any linear weight left in high precision when `quantized_module` is false and the
// checkpoint is quantized); shared experts; routed experts; attention; dense MLP; other (norms,
// biases, routers not excluded).
TensorClass classify_tensor(const std::string& name, const QuantConfig& config, bool excluded_high_precision_weight);

// The module of a tensor: its name without the last component ("a.b.weight" -> "a.b").
std::string module_of(const std::string& tensor_name);

// fnmatch-style glob with '*' (any run, including dots) and '?' (one character).
bool glob_match(std::string_view pattern, std::string_view text);

}  // namespace fp4gemm::io
