#pragma once
// The BF16 tensor-core side of the NVFP4 decode trick, shared by the kernels that multiply NVFP4
// weights on BF16 MMAs (cuda_nvfp4's mma.sync and wgmma kernels, cuda_moe's tensor-core expert
// kernel): the E4M3 scale table, the exact BF16x2 product and the mma.sync instruction.
//
// The trick: a code s|e1 e0 m placed at BF16 bits 15 | 8..6 is the BF16 number value * 2^-126
// (exponent field e, mantissa bit m; e = 0 gives the subnormal m * 2^-127). Multiplying by
// scale * 2^118 (exact, normal) yields value * scale * 2^-8; the epilogue multiplies by 2^8.
// Products of powers of two are exact, so results equal those of the unscaled computation.
// CUDA sources only.
#include <cstdint>

namespace fp4gemm::cuda {

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

// D += A * B on one m16n8k16 tile: BF16 A (4 registers, row-major) and B (2, column-major), FP32 D.
__device__ __forceinline__ void mma_bf16_m16n8k16(float (&d)[4], const std::uint32_t (&a)[4], std::uint32_t b0, std::uint32_t b1) {
  asm(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

}  // namespace fp4gemm::cuda
