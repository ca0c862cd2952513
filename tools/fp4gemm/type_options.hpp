#pragma once
// Parsing of the --activation and --output options shared by several subcommands.
#include <string>

#include "fp4gemm/types.hpp"

namespace fp4gemm::cli {

ActivationType parse_activation(const std::string& text);  // bf16 | f32 | nvfp4, else Error
DType parse_output(const std::string& text);               // bf16 | f16 | f32, else Error

}  // namespace fp4gemm::cli
