#pragma once
// The checks of one dense view (activation, output, MoE operand) shared by every validator.
#include <cstdint>
#include <string>

#include "fp4gemm/types.hpp"

namespace fp4gemm {

// Non-negative dimensions, row stride >= cols, a buffer when there are elements, and a known
// buffer size large enough. Throws Error(invalid_argument) naming `what`.
void check_dense(const DenseView& view, const char* what);

// "[rows, cols]", for messages.
std::string shape_text(std::int64_t rows, std::int64_t cols);

}  // namespace fp4gemm
