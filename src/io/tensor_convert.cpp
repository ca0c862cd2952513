#include "fp4gemm/io/tensor_convert.hpp"

#include <cstring>

#include "fp4gemm/format/half.hpp"

namespace fp4gemm::io {

bool is_floating_point(TensorDType dtype) {
  return dtype == TensorDType::f32 || dtype == TensorDType::bf16 || dtype == TensorDType::f16;
}

std::vector<float> tensor_to_float(const TensorView& tensor) {
  if (!is_floating_point(tensor.dtype())) {
    throw_io(*tensor.file + ": tensor '" + tensor.name() + "' is " + to_string(tensor.dtype()) +
             "; only F32, BF16 and F16 tensors can be read as floating point");
  }
  const std::size_t count = std::size_t(tensor.entry->elements());
  std::vector<float> values(count);
  if (count == 0) return values;
  if (tensor.dtype() == TensorDType::f32) {
    std::memcpy(values.data(), tensor.data, count * sizeof(float));  // the mapping may be unaligned
    return values;
  }
  const bool bf16 = tensor.dtype() == TensorDType::bf16;
  for (std::size_t i = 0; i < count; ++i) {
    std::uint16_t bits;
    std::memcpy(&bits, tensor.data + 2 * i, sizeof bits);
    values[i] = bf16 ? bf16_to_float(bits) : fp16_to_float(bits);
  }
  return values;
}

std::vector<std::uint8_t> float_to_bytes(const std::vector<float>& values, TensorDType dtype) {
  std::vector<std::uint8_t> bytes;
  if (dtype == TensorDType::f32) {
    bytes.resize(values.size() * sizeof(float));
    if (values.empty()) return bytes;
    std::memcpy(bytes.data(), values.data(), bytes.size());
    return bytes;
  }
  if (dtype != TensorDType::bf16) throw_invalid(std::string("float_to_bytes: cannot encode ") + to_string(dtype));
  bytes.resize(values.size() * 2);
  for (std::size_t i = 0; i < values.size(); ++i) {
    const std::uint16_t bits = float_to_bf16(values[i]);
    std::memcpy(bytes.data() + 2 * i, &bits, sizeof bits);
  }
  return bytes;
}

}  // namespace fp4gemm::io
