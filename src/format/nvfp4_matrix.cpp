#include "fp4gemm/format/nvfp4_matrix.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "fp4gemm/error.hpp"
#include "fp4gemm/format/e2m1.hpp"
#include "fp4gemm/format/e4m3.hpp"
#include "fp4gemm/format/half.hpp"
#include "fp4gemm/format/scale_layout.hpp"

namespace fp4gemm {
namespace {

constexpr std::int64_t kBlock = scale_layout::kBlock;
// Matrices from this many elements are converted and quantized by all threads (OpenMP); smaller
// ones stay on one. One thread took 4.3 s for a 28672x8192 weight.
constexpr std::int64_t kParallelMinElements = 1 << 20;
constexpr float kMinScale = 0x1p-9f;  // smallest E4M3 subnormal: ModelOpt's lower clamp of block scales

float load_element(const DenseView& view, std::int64_t row, std::int64_t col) {
  const std::int64_t index = row * view.stride() + col;
  switch (view.dtype) {
    case DType::f32: return static_cast<const float*>(view.data)[index];
    case DType::bf16: return bf16_to_float(static_cast<const std::uint16_t*>(view.data)[index]);
    case DType::f16: return fp16_to_float(static_cast<const std::uint16_t*>(view.data)[index]);
  }
  return 0.0f;
}

void check_dense_input(const DenseView& view, const char* what) {
  if (view.memory != Memory::host) throw_invalid(std::string(what) + ": quantization runs on host memory");
  if (view.rows < 0 || view.cols < 0) throw_invalid(std::string(what) + ": negative dimensions");
  if (view.cols % kBlock != 0) {
    throw_invalid(std::string(what) + ": cols (K) = " + std::to_string(view.cols) +
                  " is not a multiple of 16, the NVFP4 block size");
  }
  if (view.rows * view.cols > 0 && view.data == nullptr) throw_invalid(std::string(what) + ": null data");
  if (view.stride() < view.cols) throw_invalid(std::string(what) + ": row stride smaller than cols");
}

// Rows are read into FP32 first; a non-finite value anywhere makes the whole call an error.
std::vector<float> to_float_checked(const DenseView& view, const char* what) {
  check_dense_input(view, what);
  std::vector<float> values(static_cast<std::size_t>(view.rows * view.cols));
  // The first non-finite element in row-major order (an exception cannot leave a parallel loop).
  std::int64_t first_bad = view.rows * view.cols;
#pragma omp parallel for schedule(static) reduction(min : first_bad) if (view.rows * view.cols >= kParallelMinElements)
  for (std::int64_t row = 0; row < view.rows; ++row) {
    for (std::int64_t col = 0; col < view.cols; ++col) {
      const float value = load_element(view, row, col);
      if (!std::isfinite(value)) first_bad = std::min(first_bad, row * view.cols + col);
      values[std::size_t(row * view.cols + col)] = value;
    }
  }
  if (first_bad < view.rows * view.cols) {
    std::ostringstream message;
    message << what << ": non-finite value at [" << first_bad / view.cols << ", " << first_bad % view.cols
            << "]; NVFP4 has no Inf or NaN";
    throw_invalid(message.str());
  }
  return values;
}

float block_amax(const float* block) {
  float amax = 0.0f;
  for (int i = 0; i < kBlock; ++i) amax = std::fmax(amax, std::fabs(block[i]));
  return amax;
}

Nvfp4Matrix empty_matrix(std::int64_t rows, std::int64_t cols) {
  Nvfp4Matrix matrix;
  matrix.rows = rows;
  matrix.cols = cols;
  matrix.codes.assign(static_cast<std::size_t>(rows * cols / 2), 0);
  matrix.scales.assign(static_cast<std::size_t>(rows * cols / kBlock), 0);
  return matrix;
}

void store_codes(Nvfp4Matrix& matrix, std::int64_t row, std::int64_t block, const std::uint8_t* codes) {
  std::uint8_t* out = matrix.codes.data() + row * (matrix.cols / 2) + block * (kBlock / 2);
  for (int i = 0; i < kBlock / 2; ++i) out[i] = e2m1::pack(codes[2 * i], codes[2 * i + 1]);
}

}  // namespace

Nvfp4View Nvfp4Matrix::view() const {
  return {codes.data(), scales.data(), scale_layout, global_scale, rows, cols, Memory::host, 0,
          std::int64_t(codes.size()), std::int64_t(scales.size())};
}

void validate_nvfp4(const Nvfp4View& view, const char* what) {
  const std::string name(what);
  if (view.rows < 0 || view.cols < 0) throw_invalid(name + ": negative dimensions");
  if (view.cols % kBlock != 0) {
    throw_invalid(name + ": K = " + std::to_string(view.cols) + " is not a multiple of 16, the NVFP4 block size");
  }
  if (view.rows * view.cols > 0 && (view.codes == nullptr || view.scales == nullptr)) {
    throw_invalid(name + ": null codes or scales buffer");
  }
  if (!std::isfinite(view.global_scale)) throw_invalid(name + ": global scale is not finite");
  if (view.codes_size_bytes > 0 && view.code_bytes() > view.codes_size_bytes) {
    throw_invalid(name + ": the codes buffer holds " + std::to_string(view.codes_size_bytes) + " bytes; [" +
                  std::to_string(view.rows) + ", " + std::to_string(view.cols) + "] needs " + std::to_string(view.code_bytes()));
  }
  if (view.scales_size_bytes > 0 && view.scale_bytes() > view.scales_size_bytes) {
    throw_invalid(name + ": the scales buffer holds " + std::to_string(view.scales_size_bytes) + " bytes; " +
                  to_string(view.scale_layout) + " scales of [" + std::to_string(view.rows) + ", " +
                  std::to_string(view.cols) + "] need " + std::to_string(view.scale_bytes()));
  }
  if (view.memory != Memory::host) return;  // device scales are checked on the host before upload
  const std::int64_t columns = scale_layout::scale_cols(view.cols);
  for (std::int64_t row = 0; row < view.rows; ++row) {
    for (std::int64_t col = 0; col < columns; ++col) {
      const std::int64_t offset = view.scale_layout == ScaleLayout::linear
                                      ? row * columns + col
                                      : scale_layout::swizzled_offset(row, col, view.cols);
      if (e4m3::is_nan(view.scales[offset])) {
        throw_invalid(name + ": block scale at row " + std::to_string(row) + ", block " + std::to_string(col) +
                      " is NaN (E4M3 0x7F/0xFF)");
      }
    }
  }
}

void dequantize_row(const Nvfp4View& view, std::int64_t row, float* out, bool apply_global_scale) {
  const std::uint8_t* codes = view.codes + row * (view.cols / 2);
  const std::int64_t columns = scale_layout::scale_cols(view.cols);
  const float global = apply_global_scale ? view.global_scale : 1.0f;
  for (std::int64_t block = 0; block < columns; ++block) {
    const std::int64_t offset = view.scale_layout == ScaleLayout::linear
                                    ? row * columns + block
                                    : scale_layout::swizzled_offset(row, block, view.cols);
    const float scale = e4m3::decode(view.scales[offset]) * global;
    for (int i = 0; i < kBlock; ++i) {
      const std::int64_t col = block * kBlock + i;
      out[col] = e2m1::decode(e2m1::unpack(codes, col)) * scale;
    }
  }
}

std::vector<float> Nvfp4Matrix::dequantize(bool apply_global_scale) const {
  std::vector<float> values(static_cast<std::size_t>(rows * cols));
  const Nvfp4View source = view();
  for (std::int64_t row = 0; row < rows; ++row) dequantize_row(source, row, values.data() + row * cols, apply_global_scale);
  return values;
}

Nvfp4Matrix quantize_weight(const float* values, std::int64_t rows, std::int64_t cols) {
  DenseView view{values, DType::f32, rows, cols, 0, Memory::host, 0};
  return quantize_weight(view);
}

Nvfp4Matrix quantize_weight(const DenseView& input) {
  const std::vector<float> values = to_float_checked(input, "quantize_weight");
  const std::int64_t rows = input.rows, cols = input.cols;
  Nvfp4Matrix matrix = empty_matrix(rows, cols);

  const bool parallel = rows * cols >= kParallelMinElements;
  float amax = 0.0f;  // the values are finite, so max is exact in any order
#pragma omp parallel for schedule(static) reduction(max : amax) if (parallel)
  for (std::int64_t i = 0; i < rows * cols; ++i) amax = std::fmax(amax, std::fabs(values[std::size_t(i)]));
  // NOTE: every step below is one FP32 operation in the recipe's order; reordering changes bits.
  // (Rows are independent, so splitting them over threads does not reorder anything.)
  const float scale_2 = amax / (6.0f * 448.0f);
  matrix.global_scale = scale_2;

#pragma omp parallel for schedule(static) if (parallel)
  for (std::int64_t row = 0; row < rows; ++row) {
    std::uint8_t codes[kBlock];
    for (std::int64_t block = 0; block < cols / kBlock; ++block) {
      const float* source = values.data() + row * cols + block * kBlock;
      const float amax_block = block_amax(source);
      float scale = amax_block / (6.0f * scale_2);
      // Zero blocks get scale 1 (ModelOpt: per_block_scale == 0 -> 1). NOTE: an all-zero tensor
      // (scale_2 = 0) gives 0/0 here; ModelOpt would store NaN scales, we store 1 and zero codes.
      if (scale == 0.0f || amax_block == 0.0f) scale = 1.0f;
      // ModelOpt >= 0.45 clamps to E4M3's range before the cast, so no scale underflows to 0.
      scale = std::min(std::max(scale, kMinScale), e4m3::kMax);
      const std::uint8_t scale_code = e4m3::encode(scale);
      matrix.scales[static_cast<std::size_t>(row * (cols / kBlock) + block)] = scale_code;
      const float divisor = e4m3::decode(scale_code) * scale_2;
      for (int i = 0; i < kBlock; ++i) codes[i] = e2m1::encode(source[i] / divisor);
      store_codes(matrix, row, block, codes);
    }
  }
  return matrix;
}

float activation_global_scale(const DenseView& input) {
  check_dense_input(input, "activation_global_scale");
  float amax = 0.0f;
  for (std::int64_t row = 0; row < input.rows; ++row)
    for (std::int64_t col = 0; col < input.cols; ++col) amax = std::fmax(amax, std::fabs(load_element(input, row, col)));
  return amax == 0.0f ? 1.0f : amax / (6.0f * 448.0f);
}

Nvfp4Matrix quantize_activation(const DenseView& input, float input_scale) {
  if (!(input_scale > 0.0f) || !std::isfinite(input_scale)) {
    throw_invalid("quantize_activation: input_scale must be positive and finite");
  }
  const std::vector<float> values = to_float_checked(input, "quantize_activation");
  const std::int64_t rows = input.rows, cols = input.cols;
  Nvfp4Matrix matrix = empty_matrix(rows, cols);
  matrix.global_scale = input_scale;

  const float global = 1.0f / input_scale;  // g
  const float inverse_global = 1.0f / global;
  constexpr float kOneSixth = 1.0f / 6.0f;
  std::uint8_t codes[kBlock];
  for (std::int64_t row = 0; row < rows; ++row) {
    for (std::int64_t block = 0; block < cols / kBlock; ++block) {
      const float* source = values.data() + row * cols + block * kBlock;
      const float block_scale = global * (block_amax(source) * kOneSixth);
      const std::uint8_t scale_code = e4m3::encode(block_scale);
      matrix.scales[std::size_t(row * (cols / kBlock) + block)] = scale_code;
      const float quantized_scale = e4m3::decode(scale_code);
      const float out_scale = quantized_scale == 0.0f ? 0.0f : 1.0f / (quantized_scale * inverse_global);
      for (int i = 0; i < kBlock; ++i) codes[i] = e2m1::encode(source[i] * out_scale);
      store_codes(matrix, row, block, codes);
    }
  }
  return matrix;
}

}  // namespace fp4gemm
