#pragma once
// What `fp4gemm gemm` and `fp4gemm moe` share: which layer of which checkpoint runs on which input
// tensor into which output file, and reading the activation from a safetensors file.
#include <cstdint>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "fp4gemm/io/safetensors.hpp"
#include "fp4gemm/types.hpp"

namespace fp4gemm::cli {

struct LayerRunFiles {
  std::string checkpoint;
  std::string layer;
  std::string input;
  std::string input_name;  // empty: the input file's only tensor
  std::string output;
  std::string output_name = "output";
  std::string output_dtype = "bf16";
};

// Adds --checkpoint, --layer, --input, --input-name, --output, --output-name and --output-dtype,
// each help text naming `layer_example` and the input and output shapes.
void add_layer_run_options(CLI::App* command, LayerRunFiles& files, const std::string& layer_example,
                           const std::string& input_shape, const std::string& output_shape);

// The tensor `name` of `file`, or its only tensor when `name` is empty (Error naming the
// tensors it holds when it has several).
io::TensorView pick_input(const io::SafetensorsFile& file, const std::string& name);

// The activation as an aligned host buffer: BF16 stays BF16, F32 stays F32.
struct Activation {
  std::vector<float> f32;
  std::vector<std::uint16_t> bf16;
  DenseView view;
};

// `tensor` must be BF16 or F32 [M, k]; Error(invalid_argument) naming the file and tensor otherwise.
Activation load_activation(const io::TensorView& tensor, std::int64_t k);

// bf16 or f32, else Error naming --output-dtype.
io::TensorDType parse_output_dtype(const std::string& text);

}  // namespace fp4gemm::cli
