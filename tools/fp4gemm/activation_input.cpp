#include "activation_input.hpp"

#include <cstring>

#include "fp4gemm/error.hpp"
#include "fp4gemm/io/tensor_convert.hpp"

namespace fp4gemm::cli {

void add_layer_run_options(CLI::App* command, LayerRunFiles& files, const std::string& layer_example,
                           const std::string& input_shape, const std::string& output_shape) {
  command->add_option("--checkpoint", files.checkpoint, "Checkpoint: .safetensors file, index or directory")->required();
  command->add_option("--layer", files.layer, "Layer prefix, e.g. " + layer_example)->required();
  command->add_option("--input", files.input, "safetensors file with the activation (BF16 or F32, " + input_shape + ")")->required();
  command->add_option("--input-name", files.input_name, "Tensor to use from --input (default: its only tensor)");
  command->add_option("--output", files.output, "safetensors file to write the result " + output_shape + " to")->required();
  command->add_option("--output-name", files.output_name, "Name of the result tensor")->capture_default_str();
  command->add_option("--output-dtype", files.output_dtype, "bf16 or f32")->capture_default_str();
}

io::TensorView pick_input(const io::SafetensorsFile& file, const std::string& name) {
  if (!name.empty()) return file.get(name);
  if (file.tensors().size() != 1) {
    std::string names;
    for (const io::TensorEntry& entry : file.tensors()) names += (names.empty() ? "" : ", ") + entry.name;
    throw_invalid(file.path() + " holds " + std::to_string(file.tensors().size()) + " tensors (" + names +
                  "); choose one with --input-name");
  }
  return file.view(file.tensors().front());
}

Activation load_activation(const io::TensorView& tensor, std::int64_t k) {
  if (tensor.shape().size() != 2 || tensor.shape()[1] != k) {
    throw_invalid(*tensor.file + ": input tensor '" + tensor.name() + "' has shape " + tensor.entry->shape_string() +
                  "; the layer needs [M, " + std::to_string(k) + "]");
  }
  const std::int64_t m = tensor.shape()[0];
  Activation activation;
  if (tensor.dtype() == io::TensorDType::bf16) {
    activation.bf16.resize(std::size_t(m * k));
    if (m > 0) std::memcpy(activation.bf16.data(), tensor.data, tensor.entry->byte_size());
    activation.view = {activation.bf16.data(), DType::bf16, m, k};
  } else if (tensor.dtype() == io::TensorDType::f32) {
    activation.f32 = io::tensor_to_float(tensor);
    activation.view = {activation.f32.data(), DType::f32, m, k};
  } else {
    throw_invalid(*tensor.file + ": input tensor '" + tensor.name() + "' is " + io::to_string(tensor.dtype()) +
                  "; the activation must be BF16 or F32");
  }
  return activation;
}

io::TensorDType parse_output_dtype(const std::string& text) {
  if (text == "bf16") return io::TensorDType::bf16;
  if (text == "f32") return io::TensorDType::f32;
  throw_invalid("--output-dtype must be bf16 or f32, not '" + text + "'");
}

}  // namespace fp4gemm::cli
