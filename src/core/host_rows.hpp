#pragma once
// Row access shared by host backends: activations in as FP32, outputs out in any dtype.
#include <cstdint>

#include "fp4gemm/format/half.hpp"
#include "fp4gemm/types.hpp"

namespace fp4gemm {

// Row `row` of a host activation as FP32 (`out` holds cols() floats). NVFP4 activations are
// dequantized with their block scales only: their global scale belongs in alpha.
void load_activation_row(const ActivationView& a, std::int64_t row, float* out);

inline void store_output(const MutableDenseView& out, std::int64_t row, std::int64_t col, float value) {
  const std::int64_t index = row * out.stride() + col;
  switch (out.dtype) {
    case DType::f32: static_cast<float*>(out.data)[index] = value; break;
    case DType::bf16: static_cast<std::uint16_t*>(out.data)[index] = float_to_bf16(value); break;
    case DType::f16: static_cast<std::uint16_t*>(out.data)[index] = float_to_fp16(value); break;
  }
}

}  // namespace fp4gemm
