#pragma once
// Device helpers shared by the two `cuda_nvfp4` kernels (sm80_nvfp4_mma_gemm.cu, mma.sync; and
// sm90_nvfp4_wgmma_gemm.cu, wgmma): the fragment decode of cuda_nvfp4's weight layout (the decode
// trick and the scale table: cuda_common/bf16_mma_decode.cuh; the streaming loads:
// cuda_common/streaming_loads.cuh).
//
// A nibble's bits are placed at BF16 bits 15 | 8..6 (value * 2^-126) by fragment_bits
// (weight_bits.hpp), then scaled by the table's scale * 2^118.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "backends/cuda_common/bf16_mma_decode.cuh"
#include "backends/cuda_common/streaming_loads.cuh"
#include "backends/cuda_nvfp4/weight_bits.hpp"
#include "backends/cuda_nvfp4/weight_layout.hpp"
#include "fp4gemm/types.hpp"

namespace fp4gemm::cuda_nvfp4 {

// The scale side of the decode trick and the MMA live in cuda_common (shared with cuda_moe).
using cuda::bf16x2_mul;
using cuda::fill_scale_table;
using cuda::kDecodeCompensation;
using cuda::lookup_row_scales;
using cuda::RowScales;
using cuda::scale_entry_offset_g;
using cuda::scale_entry_offset_g8;
using cuda::scale_to_bf16_bits;

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
