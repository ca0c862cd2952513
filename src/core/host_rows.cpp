#include "core/host_rows.hpp"

#include "fp4gemm/format/nvfp4_matrix.hpp"

namespace fp4gemm {

void load_activation_row(const ActivationView& a, std::int64_t row, float* out) {
  if (a.type == ActivationType::nvfp4) {
    dequantize_row(a.nvfp4, row, out, /*apply_global_scale=*/false);
    return;
  }
  const std::int64_t cols = a.dense.cols;
  if (a.dense.dtype == DType::f32) {
    const float* source = static_cast<const float*>(a.dense.data) + row * a.dense.stride();
    for (std::int64_t col = 0; col < cols; ++col) out[col] = source[col];
  } else {
    const std::uint16_t* source = static_cast<const std::uint16_t*>(a.dense.data) + row * a.dense.stride();
    for (std::int64_t col = 0; col < cols; ++col) out[col] = bf16_to_float(source[col]);
  }
}

}  // namespace fp4gemm
