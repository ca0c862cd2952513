#pragma once
// Converting tensor bytes from files (any alignment) to FP32 and back, for the CLI's quantize and
// gemm commands.
#include <cstdint>
#include <vector>

#include "fp4gemm/io/safetensors.hpp"

namespace fp4gemm::io {

bool is_floating_point(TensorDType dtype);  // F32, BF16, F16 (the dtypes we convert)

// The tensor's values as FP32 (F32, BF16 or F16; other dtypes are Error(io) naming the tensor).
std::vector<float> tensor_to_float(const TensorView& tensor);

// FP32 values encoded as F32 or BF16 (round to nearest even) bytes, little-endian.
std::vector<std::uint8_t> float_to_bytes(const std::vector<float>& values, TensorDType dtype);

}  // namespace fp4gemm::io
