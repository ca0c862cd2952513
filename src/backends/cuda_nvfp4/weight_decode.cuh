#pragma once
// Device helpers shared by the two `cuda_nvfp4` kernels (sm80_nvfp4_mma_gemm.cu, mma.sync; and
// sm90_nvfp4_wgmma_gemm.cu, wgmma): the scale table and the fragment decode (the streaming loads are
// cuda_common/streaming_loads.cuh).
//
// Decode trick (see weight_layout.hpp for the nibble order): a nibble s|e1 e0 m placed at BF16
// bits 15 | 8..6 is the BF16 number value * 2^-126 (exponent field e, mantissa bit m; e = 0 gives
// the subnormal m * 2^-127). Multiplying by scale * 2^118 (exact, normal) yields value * scale * 2^-8;
// the epilogue multiplies by alpha * 2^8. Products of powers of two are exact, so results equal
// those of the unscaled computation.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "backends/cuda_common/streaming_loads.cuh"
#include "backends/cuda_nvfp4/weight_bits.hpp"
#include "backends/cuda_nvfp4/weight_layout.hpp"
#include "fp4gemm/types.hpp"

namespace fp4gemm::cuda_nvfp4 {

inline constexpr float kDecodeCompensation = 256.0f;  // 2^8, undoes the 2^-8 left by the decode trick

// E4M3 code -> BF16 bits of (value * 2^118), exact: normal codes keep their 3 mantissa bits and get
// exponent E - 7 + 127 + 118; subnormal ones (E = 0) are m * 2^-9 * 2^118.
__device__ __forceinline__ std::uint32_t scale_to_bf16_bits(unsigned code) {
  const unsigned exponent = (code >> 3) & 0xF, mantissa = code & 0x7;
  float value = exponent == 0 ? float(mantissa) * 0x1p109f : __uint_as_float(((exponent + 238u) << 23) | (mantissa << 20));
  if (code & 0x80) value = -value;
  return __float_as_uint(value) >> 16;  // exact: at most 3 mantissa bits
}

// Fills a shared 256-entry table: E4M3 code -> BF16x2 pair (both lanes the scale). The caller syncs.
__device__ __forceinline__ void fill_scale_table(std::uint32_t* table, int thread, int threads) {
  for (int code = thread; code < 256; code += threads) table[code] = scale_to_bf16_bits(code) * 0x10001u;
}

__device__ __forceinline__ std::uint32_t bf16x2_mul(std::uint32_t a, std::uint32_t b) {
  std::uint32_t result;
  // fma with -0.0 addend is an exact product (sm_80+); mul.bf16x2 itself needs sm_90.
  asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(result) : "r"(a), "r"(b), "r"(0x80008000u));
  return result;
}

// The lane's two row scales of one chunk (rows g and g+8) as BF16x2 pairs, from the scale table.
struct RowScales {
  std::uint32_t g, g8;
};
// Byte offsets of the two scales' 4-byte table entries: (byte 0 << 2) without a separate shift and
// AND, (byte 1 << 2) as a high multiply, which runs on the FMA pipe instead of the busier ALU.
__device__ __forceinline__ std::uint32_t scale_entry_offset_g(std::uint32_t scale_bytes) { return (scale_bytes << 2) & 0x3FC; }
__device__ __forceinline__ std::uint32_t scale_entry_offset_g8(std::uint32_t scale_bytes) {
  return __umulhi(scale_bytes, 1u << 26) & 0x3FC;
}
__device__ __forceinline__ RowScales lookup_row_scales(std::uint32_t scale_bytes, const std::uint32_t* scale_table) {
  const char* table = reinterpret_cast<const char*>(scale_table);
  RowScales scales;
  scales.g = *reinterpret_cast<const std::uint32_t*>(table + scale_entry_offset_g(scale_bytes));
  scales.g8 = *reinterpret_cast<const std::uint32_t*>(table + scale_entry_offset_g8(scale_bytes));
  return scales;
}

// The 16x16 A fragment (mma.m16n8k16 layout, also wgmma's register-A layout per warp) of one MMA
// block: registers 0 and 2 hold row g, 1 and 3 row g+8.
__device__ __forceinline__ void decode_fragment(std::uint32_t word, const RowScales& scales, std::uint32_t (&fragment)[4]) {
  fragment[0] = bf16x2_mul(fragment_bits(word, 0), scales.g);
  fragment[1] = bf16x2_mul(fragment_bits(word, 1), scales.g8);
  fragment[2] = bf16x2_mul(fragment_bits(word, 2), scales.g);
  fragment[3] = bf16x2_mul(fragment_bits(word, 3), scales.g8);
}

// An FP32 result as output element type T (float, __nv_bfloat16 or __half), rounded to nearest even.
template <class T>
__device__ __forceinline__ T output_value(float value) {
  if constexpr (std::is_same_v<T, float>) return value;
  else if constexpr (std::is_same_v<T, __nv_bfloat16>) return __float2bfloat16_rn(value);
  else return __float2half_rn(value);
}

__device__ __forceinline__ void store_output(void* out, std::int64_t index, DType dtype, float value) {
  switch (dtype) {
    case DType::f32: static_cast<float*>(out)[index] = output_value<float>(value); break;
    case DType::bf16: static_cast<__nv_bfloat16*>(out)[index] = output_value<__nv_bfloat16>(value); break;
    case DType::f16: static_cast<__half*>(out)[index] = output_value<__half>(value); break;
  }
}

}  // namespace fp4gemm::cuda_nvfp4
