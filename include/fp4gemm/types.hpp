#pragma once
// Views over caller-owned memory and the description of one GEMM problem.
// A view never owns memory and always says where the memory lives.
// NOTE: CUDA sources include this header and are compiled as C++17: keep it free of C++20.
#include <cstdint>
#include <string>

namespace fp4gemm {

enum class Memory { host, cuda };

// Element types of dense matrices (activations and outputs).
enum class DType { f32, bf16, f16 };

// How the E4M3 block scales of an NVFP4 matrix are laid out.
enum class ScaleLayout {
  linear,         // [rows, cols/16] row-major, as checkpoints store them
  swizzled_128x4  // cuBLASLt VEC16_UE4M3 / CUTLASS tiles of 128 rows x 4 scale columns
};

// The activation operand: W4A16 takes BF16 or FP32 activations, W4A4 takes NVFP4 activations.
enum class ActivationType { f32, bf16, nvfp4 };

std::size_t dtype_size(DType dtype);
const char* to_string(DType dtype);
const char* to_string(Memory memory);
const char* to_string(ScaleLayout layout);
const char* to_string(ActivationType type);

// An NVFP4 matrix [rows, cols]: packed E2M1 codes, E4M3 block scales (one per 16 elements along
// cols) and one FP32 global scale. Value(r, c) = e2m1(code) * e4m3(scale) * global_scale.
struct Nvfp4View {
  const std::uint8_t* codes = nullptr;   // [rows, cols/2]; element 2i in the low nibble
  const std::uint8_t* scales = nullptr;  // E4M3 bytes in `scale_layout`
  ScaleLayout scale_layout = ScaleLayout::linear;
  float global_scale = 1.0f;  // weight_scale_2 for weights, input_scale for activations
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  Memory memory = Memory::host;
  int device = 0;
  // Sizes of the two buffers when the caller knows them (0: unknown, not checked). When given,
  // a buffer too short for the shape is rejected instead of read past its end.
  std::int64_t codes_size_bytes = 0;
  std::int64_t scales_size_bytes = 0;

  std::int64_t code_bytes() const { return rows * (cols / 2); }
  std::int64_t scale_bytes() const;  // including swizzle padding
};

// A dense row-major matrix with a row stride in elements (>= cols).
struct DenseView {
  const void* data = nullptr;
  DType dtype = DType::f32;
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  std::int64_t row_stride = 0;  // 0 means cols
  Memory memory = Memory::host;
  int device = 0;
  std::int64_t size_bytes = 0;  // the buffer's size when known (0: unknown, not checked)

  std::int64_t stride() const { return row_stride == 0 ? cols : row_stride; }
  // Bytes the shape and stride reach: (rows-1)*stride + cols elements.
  std::int64_t required_bytes() const;
};

struct MutableDenseView {
  void* data = nullptr;
  DType dtype = DType::f32;
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  std::int64_t row_stride = 0;
  Memory memory = Memory::host;
  int device = 0;
  std::int64_t size_bytes = 0;  // the buffer's size when known (0: unknown, not checked)

  std::int64_t stride() const { return row_stride == 0 ? cols : row_stride; }
  DenseView as_const() const { return {data, dtype, rows, cols, row_stride, memory, device, size_bytes}; }
};

// The activation operand of one GEMM: dense (W4A16) or NVFP4 (W4A4).
struct ActivationView {
  ActivationType type = ActivationType::f32;
  DenseView dense;   // when type is f32 or bf16
  Nvfp4View nvfp4;   // when type is nvfp4 (its global_scale is NOT applied: fold it into alpha)

  static ActivationView from_dense(const DenseView& view);
  static ActivationView from_nvfp4(const Nvfp4View& view);
  std::int64_t rows() const { return type == ActivationType::nvfp4 ? nvfp4.rows : dense.rows; }
  std::int64_t cols() const { return type == ActivationType::nvfp4 ? nvfp4.cols : dense.cols; }
  Memory memory() const { return type == ActivationType::nvfp4 ? nvfp4.memory : dense.memory; }
};

// out[m, n] = alpha * sum_k a[m, k] * w[n, k], w = e2m1 * e4m3 block scale (global scales are the
// caller's to fold into alpha: alpha = weight_scale_2 for W4A16, input_scale * weight_scale_2 for W4A4).
struct GemmProblem {
  std::int64_t m = 0;
  std::int64_t n = 0;
  std::int64_t k = 0;
  ActivationType activation = ActivationType::bf16;
  DType output = DType::bf16;

  std::string to_string() const;  // "m=1 n=4096 k=4096 a=bf16 out=bf16"
  double flops() const { return 2.0 * double(m) * double(n) * double(k); }
  // Fewest bytes a GEMM must move: NVFP4 weights at kNvfp4BytesPerElement (nvfp4_matrix.hpp), activations and output once.
  double minimal_bytes() const;
  bool operator==(const GemmProblem& other) const {
    return m == other.m && n == other.n && k == other.k && activation == other.activation && output == other.output;
  }
};

}  // namespace fp4gemm
