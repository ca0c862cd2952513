// Finding and validating the NVFP4 layers of a checkpoint. Everything a GEMM will trust is checked
// here: dtypes, shapes that agree with each other, finite global scales, no NaN block scale.
#include <cmath>
#include <cstring>
#include <set>

#include "fp4gemm/format/e4m3.hpp"
#include "fp4gemm/format/half.hpp"
#include "fp4gemm/format/scale_layout.hpp"
#include "fp4gemm/io/modelopt.hpp"

namespace fp4gemm::io {
namespace {

// Tensor names of each convention, relative to the layer prefix.
struct ConventionNames {
  const char* weight;
  const char* global_scale;
  const char* input_scale;
};
constexpr ConventionNames kModelOpt{"weight", "weight_scale_2", "input_scale"};
constexpr ConventionNames kCompressedTensors{"weight_packed", "weight_global_scale", "input_global_scale"};

const ConventionNames& names_of(Nvfp4Convention convention) {
  return convention == Nvfp4Convention::modelopt ? kModelOpt : kCompressedTensors;
}

[[noreturn]] void fail(const TensorView& tensor, const std::string& what, const std::string& fix) {
  throw_io(*tensor.file + ": tensor '" + tensor.name() + "' " + what + "; " + fix);
}

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() > suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

float positive_global_scale(const TensorView& tensor, bool reciprocal, bool allow_zero) {
  float value = read_scalar(tensor);
  if (!std::isfinite(value) || value < 0.0f || (value == 0.0f && (reciprocal || !allow_zero))) {
    fail(tensor, "holds " + std::to_string(value) + ", not a " + (allow_zero && !reciprocal ? "non-negative" : "positive") +
                     " finite scale", "the checkpoint is damaged; re-export it");
  }
  if (reciprocal) value = 1.0f / value;
  return value;
}

}  // namespace

const char* to_string(Nvfp4Convention convention) {
  return convention == Nvfp4Convention::modelopt ? "modelopt" : "compressed-tensors";
}

float read_scalar(const TensorView& tensor) {
  if (tensor.entry->elements() != 1 || tensor.shape().size() > 1) {
    fail(tensor, "has shape " + tensor.entry->shape_string() + ", not a scalar ([] or [1])", "the checkpoint is damaged");
  }
  std::uint16_t half_bits = 0;
  switch (tensor.dtype()) {
    case TensorDType::f32: {
      float value;
      std::memcpy(&value, tensor.data, sizeof value);
      return value;
    }
    case TensorDType::bf16:
      std::memcpy(&half_bits, tensor.data, sizeof half_bits);
      return bf16_to_float(half_bits);
    case TensorDType::f16:
      std::memcpy(&half_bits, tensor.data, sizeof half_bits);
      return fp16_to_float(half_bits);
    default:
      fail(tensor, std::string("has dtype ") + to_string(tensor.dtype()) + ", not F32 (or BF16/F16)", "the checkpoint is damaged");
  }
}

void check_block_scale_bytes(const TensorView& scales, std::int64_t blocks_per_row) {
  const std::uint8_t* bytes = scales.data;
  const std::int64_t count = std::int64_t(scales.entry->byte_size());
  for (std::int64_t i = 0; i < count; ++i) {
    if (e4m3::is_nan(bytes[i]) || (bytes[i] & 0x80)) {
      fail(scales, "has a " + std::string(e4m3::is_nan(bytes[i]) ? "NaN" : "negative") + " block scale at row " +
                       std::to_string(i / blocks_per_row) + ", block " + std::to_string(i % blocks_per_row),
           "the checkpoint is damaged; re-export it");
    }
  }
}

Nvfp4View Nvfp4Layer::view() const {
  return {weight.data, weight_scale.data, ScaleLayout::linear, weight_scale_2, rows, cols, Memory::host, 0,
          std::int64_t(weight.entry->byte_size()), std::int64_t(weight_scale.entry->byte_size())};
}

std::int64_t Nvfp4Layer::bytes() const {
  return std::int64_t(weight.entry->byte_size() + weight_scale.entry->byte_size()) + 4 + (input_scale ? 4 : 0);
}

std::vector<std::string> find_nvfp4_layers(const Checkpoint& checkpoint) {
  std::set<std::string> prefixes;
  for (const std::string& name : checkpoint.tensor_names()) {
    for (const std::string suffix : {".weight_scale_2", ".weight_global_scale"})
      if (ends_with(name, suffix)) prefixes.insert(name.substr(0, name.size() - suffix.size()));
  }
  return {prefixes.begin(), prefixes.end()};
}

Nvfp4Layer load_nvfp4_layer(const Checkpoint& checkpoint, const std::string& prefix, bool check_block_scales) {
  Nvfp4Layer layer;
  layer.prefix = prefix;
  if (checkpoint.find(prefix + ".weight_scale_2")) {
    layer.convention = Nvfp4Convention::modelopt;
  } else if (checkpoint.find(prefix + ".weight_global_scale")) {
    layer.convention = Nvfp4Convention::compressed_tensors;
  } else {
    throw_io(checkpoint.description() + ": '" + prefix + "' is not an NVFP4 layer (no " + prefix + ".weight_scale_2 or " +
             prefix + ".weight_global_scale); `fp4gemm inspect` lists the quantized layers");
  }
  const ConventionNames& names = names_of(layer.convention);
  const bool reciprocal = layer.convention == Nvfp4Convention::compressed_tensors;
  layer.weight = checkpoint.get(prefix + "." + names.weight);
  layer.weight_scale = checkpoint.get(prefix + ".weight_scale");

  // Codes: uint8 [N, K/2].
  const TensorView& weight = layer.weight;
  if (weight.dtype() != TensorDType::u8 || weight.shape().size() != 2) {
    fail(weight, std::string("is ") + to_string(weight.dtype()) + " " + weight.entry->shape_string() +
                     ", not packed E2M1 codes (U8, 2-D [N, K/2])", "the checkpoint is not NVFP4 or is damaged");
  }
  layer.rows = weight.shape()[0];
  layer.cols = weight.shape()[1] * 2;
  if (layer.cols % scale_layout::kBlock != 0) {
    fail(weight, "has K = " + std::to_string(layer.cols) + ", not a multiple of 16, the NVFP4 block size", "the checkpoint is damaged");
  }

  // Block scales: float8_e4m3fn [N, K/16].
  const TensorView& scales = layer.weight_scale;
  const std::vector<std::int64_t> scale_shape{layer.rows, layer.cols / scale_layout::kBlock};
  if (scales.dtype() != TensorDType::f8_e4m3 || scales.shape() != scale_shape) {
    fail(scales, std::string("is ") + to_string(scales.dtype()) + " " + scales.entry->shape_string() + ", but weight " +
                     weight.entry->shape_string() + " needs F8_E4M3 [" + std::to_string(scale_shape[0]) + ", " +
                     std::to_string(scale_shape[1]) + "]", "the checkpoint is damaged or uses another block size");
  }
  if (check_block_scales) check_block_scale_bytes(scales, scale_shape[1]);

  // NOTE: an all-zero weight has weight_scale_2 = 0 under ModelOpt's recipe; that is valid.
  layer.weight_scale_2 = positive_global_scale(checkpoint.get(prefix + "." + names.global_scale), reciprocal, true);
  if (const auto input = checkpoint.find(prefix + "." + names.input_scale)) {
    layer.input_scale = positive_global_scale(*input, reciprocal, false);
  }
  return layer;
}

}  // namespace fp4gemm::io
