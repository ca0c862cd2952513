#pragma once
// Device decoders of the NVFP4 element and scale formats, shared by the kernels that read NVFP4
// (the dequantization kernel, the MoE expert kernels). CUDA sources only.

namespace fp4gemm::cuda {

// Twice the magnitude of each E2M1 code 0..7 (0, 0.5, 1, 1.5, 2, 3, 4, 6), one nibble each, so a
// shift replaces a table lookup (a per-thread table indexed at run time would go to local memory).
constexpr unsigned kTwiceE2m1Magnitudes = 0xC8643210u;

__device__ __forceinline__ float e2m1_value(unsigned code) {
  const float magnitude = float((kTwiceE2m1Magnitudes >> (4 * (code & 7u))) & 0xFu) * 0.5f;
  return (code & 8u) ? -magnitude : magnitude;
}

// E4M3 "fn": bias 7, subnormals m * 2^-9, 0x7F/0xFF NaN (propagates, as on the host reference).
__device__ __forceinline__ float e4m3_value(unsigned code) {
  const unsigned exponent = (code >> 3) & 0xFu, mantissa = code & 7u;
  float magnitude;
  if (exponent == 0xFu && mantissa == 7u) {
    magnitude = __int_as_float(0x7FC00000);
  } else if (exponent == 0) {
    magnitude = float(mantissa) * 0.001953125f;  // 2^-9
  } else {
    magnitude = __int_as_float(int(((exponent + 120u) << 23) | (mantissa << 20)));  // 2^(e-7) * 1.m
  }
  return (code & 0x80u) ? -magnitude : magnitude;
}

}  // namespace fp4gemm::cuda
