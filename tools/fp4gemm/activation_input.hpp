#pragma once
// Reading the activation of `fp4gemm gemm` and `fp4gemm moe` from a safetensors file.
#include <cstdint>
#include <string>
#include <vector>

#include "fp4gemm/io/safetensors.hpp"
#include "fp4gemm/types.hpp"

namespace fp4gemm::cli {

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
