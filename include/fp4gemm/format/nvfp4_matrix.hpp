#pragma once
// An owning NVFP4 matrix on the host, and the ModelOpt quantization recipe that makes one.
#include <cstdint>
#include <vector>

#include "fp4gemm/types.hpp"

namespace fp4gemm {

// Bytes per element of an NVFP4 matrix: a 4-bit E2M1 code (0.5 B) plus one E4M3 scale per block
// of 16 (1/16 B), 0.5625 in all; the least any layout of it can hold.
inline constexpr double kNvfp4BytesPerElement = 0.5 + 1.0 / 16.0;

struct Nvfp4Matrix {
  std::vector<std::uint8_t> codes;   // [rows, cols/2]
  std::vector<std::uint8_t> scales;  // E4M3, linear [rows, cols/16] unless converted
  ScaleLayout scale_layout = ScaleLayout::linear;
  float global_scale = 1.0f;
  std::int64_t rows = 0;
  std::int64_t cols = 0;

  Nvfp4View view() const;
  // Dequantize to FP32, [rows, cols]. With `apply_global_scale` false the result is
  // e2m1 * e4m3 only (exactly representable in BF16; see docs/NVFP4 notes).
  std::vector<float> dequantize(bool apply_global_scale = true) const;
};

// Checks a view's shape, buffers and scales; throws Error naming `what` on the first problem.
// NaN scales (0x7F/0xFF) are rejected: they would poison every output they touch.
void validate_nvfp4(const Nvfp4View& view, const char* what);

// Dequantize one row of a host view to FP32 (block scale applied; global scale applied when asked).
void dequantize_row(const Nvfp4View& view, std::int64_t row, float* out, bool apply_global_scale);

// Weight quantization, ModelOpt recipe (nvfp4_tensor.py as of nvidia-modelopt 0.47; byte-identical
// to its output, see tests/io/golden_quantize_test.sh), all arithmetic in FP32:
//   scale_2 = amax(|W|) / (6*448); per block s = block_amax / (6*scale_2), s = 1 where it is 0,
//   clamped to [2^-9, 448], cast to E4M3 (RNE); x = W / (float(s) * scale_2); code = E2M1 RNE
//   saturating. (ModelOpt before 0.45 did not clamp: tiny blocks got scale 0 and decoded to zeros.)
// `values` is [rows, cols] row-major with cols a multiple of 16. Non-finite input is rejected.
Nvfp4Matrix quantize_weight(const float* values, std::int64_t rows, std::int64_t cols);
Nvfp4Matrix quantize_weight(const DenseView& values);  // f32, bf16 or f16 on the host

// Activation quantization, the convention of the Blackwell runtime kernels (TRT-LLM
// cvt_warp_fp16_to_fp4, FlashInfer, vLLM scaled_fp4_quant), with exact FP32 division where the
// GPU uses rcp.approx: g = 1/input_scale; sf = g * (block_amax * (1/6)) -> E4M3 satfinite = sf_q;
// out_scale = 1 / (float(sf_q) * (1/g)) (0 when sf_q is 0); code = E2M1 RNE satfinite(x * out_scale).
// The result's global_scale is input_scale: a ~= code * sf_q * input_scale.
Nvfp4Matrix quantize_activation(const DenseView& values, float input_scale);

// input_scale a calibration would pick for this tensor: amax / (6*448) (1 for an all-zero tensor).
float activation_global_scale(const DenseView& values);

}  // namespace fp4gemm
