#include "type_options.hpp"

#include "fp4gemm/error.hpp"

namespace fp4gemm::cli {

ActivationType parse_activation(const std::string& text) {
  if (text == "bf16") return ActivationType::bf16;
  if (text == "f32") return ActivationType::f32;
  if (text == "nvfp4") return ActivationType::nvfp4;
  throw_invalid("--activation '" + text + "' is not one of bf16, f32, nvfp4");
}

DType parse_output(const std::string& text) {
  if (text == "bf16") return DType::bf16;
  if (text == "f16") return DType::f16;
  if (text == "f32") return DType::f32;
  throw_invalid("--output '" + text + "' is not one of bf16, f16, f32");
}

}  // namespace fp4gemm::cli
