#include "fp4gemm/types.hpp"

#include <sstream>

#include "fp4gemm/format/nvfp4_matrix.hpp"
#include "fp4gemm/format/scale_layout.hpp"

namespace fp4gemm {

std::size_t dtype_size(DType dtype) { return dtype == DType::f32 ? 4 : 2; }

const char* to_string(DType dtype) {
  switch (dtype) {
    case DType::f32: return "f32";
    case DType::bf16: return "bf16";
    case DType::f16: return "f16";
  }
  return "?";
}

const char* to_string(Memory memory) { return memory == Memory::host ? "host" : "cuda"; }

const char* to_string(ScaleLayout layout) {
  return layout == ScaleLayout::linear ? "linear" : "swizzled_128x4";
}

const char* to_string(ActivationType type) {
  switch (type) {
    case ActivationType::f32: return "f32";
    case ActivationType::bf16: return "bf16";
    case ActivationType::nvfp4: return "nvfp4";
  }
  return "?";
}

std::int64_t Nvfp4View::scale_bytes() const {
  return scale_layout == ScaleLayout::linear ? rows * scale_layout::scale_cols(cols)
                                             : scale_layout::swizzled_bytes(rows, cols);
}

std::int64_t DenseView::required_bytes() const {
  if (rows <= 0 || cols <= 0) return 0;
  return ((rows - 1) * stride() + cols) * std::int64_t(dtype_size(dtype));
}

ActivationView ActivationView::from_dense(const DenseView& view) {
  ActivationView activation;
  activation.type = view.dtype == DType::bf16 ? ActivationType::bf16 : ActivationType::f32;
  activation.dense = view;
  return activation;
}

ActivationView ActivationView::from_nvfp4(const Nvfp4View& view) {
  ActivationView activation;
  activation.type = ActivationType::nvfp4;
  activation.nvfp4 = view;
  return activation;
}

std::string GemmProblem::to_string() const {
  std::ostringstream text;
  text << "m=" << m << " n=" << n << " k=" << k << " a=" << fp4gemm::to_string(activation)
       << " out=" << fp4gemm::to_string(output);
  return text.str();
}

double GemmProblem::minimal_bytes() const {
  const double weight_bytes = double(n) * double(k) * kNvfp4BytesPerElement;
  const double activation_bytes = activation == ActivationType::nvfp4
                                      ? double(m) * double(k) * kNvfp4BytesPerElement
                                      : double(m) * double(k) * (activation == ActivationType::f32 ? 4 : 2);
  const double output_bytes = double(m) * double(n) * double(dtype_size(output));
  return weight_bytes + activation_bytes + output_bytes;
}

}  // namespace fp4gemm
