#pragma once
// What the consumer warps of the wgmma kernels (small-M and prefill) do with one 64-wide chunk:
// decode a 16-row tile from a shared-memory weight stage into four A fragments, and issue the
// warpgroup's four wgmma.m64nTk16 against the chunk's packed activations; and how a lane stores its
// accumulators straight from registers.
#include <cstdint>

#include "backends/cuda_nvfp4/activation_pack_layout.hpp"
#include "backends/cuda_nvfp4/weight_decode.cuh"
#include "backends/cuda_nvfp4/kernel_problem.hpp"
#include "backends/cuda_nvfp4/sm90_async_ops.cuh"

namespace fp4gemm::cuda_nvfp4 {

#if FP4GEMM_SM90A_DEVICE

// Decodes a lane's part of a 16-row tile of one chunk into four A fragments: its 16 code bytes at
// shared address `code_address`, its two scale bytes at `scale_address`, the scale table at
// `table_address` (shared addresses, so that a loop can keep them in registers).
__device__ __forceinline__ void decode_tile_at(std::uint32_t code_address, std::uint32_t scale_address, std::uint32_t table_address,
                                               std::uint32_t (&fragments)[kBlocksPerChunk][4]) {
  const uint4 words = load_shared_16(code_address);
  const std::uint32_t scale_bytes = load_shared_2(scale_address);
  RowScales scales;
  scales.g = load_shared_4(table_address + scale_entry_offset_g(scale_bytes));
  scales.g8 = load_shared_4(table_address + scale_entry_offset_g8(scale_bytes));
  decode_fragment(words.x, scales, fragments[0]);
  decode_fragment(words.y, scales, fragments[1]);
  decode_fragment(words.z, scales, fragments[2]);
  decode_fragment(words.w, scales, fragments[3]);
}

// The shared addresses of a consumer warp's main loop in stage 0 (its tile's codes and scales, the
// scale table, the full and empty barriers, the activations' first descriptor word), computed once
// and pinned in every step (pin): left to itself ptxas rebuilt them in every step from SR_TID.X and
// SR_CgaCtaId, about 20 instructions and two S2R latencies on each chunk's chain (ncu source view).
struct ConsumerAddresses {
  std::uint32_t code, scale, table, full, empty, first_descriptor;
  __device__ __forceinline__ void pin() {
    pin_register(code), pin_register(scale), pin_register(table);
    pin_register(full), pin_register(empty), pin_register(first_descriptor);
  }
};

// The low descriptor word of the packed activations at shared address `activation_address`.
__device__ __forceinline__ std::uint32_t activation_descriptor(std::uint32_t activation_address) {
  return shared_matrix_descriptor_low<kCoreMatrixKStep>(activation_address);
}

// The chunk's four MMA blocks: D(64 x kTokens) += A(fragments) * B, B the packed activations whose
// first descriptor word is `first_descriptor` (activation_descriptor; shared memory,
// activation_pack_layout.hpp); each block's is an immediate further (see
// shared_matrix_descriptor_low). The caller fences before and commits after.
template <int kTokens>
__device__ __forceinline__ void issue_chunk_wgmmas_at(float (&accumulators)[kTokens / 2],
                                                      const std::uint32_t (&fragments)[kBlocksPerChunk][4], std::uint32_t first_descriptor) {
#pragma unroll
  for (int block = 0; block < kBlocksPerChunk; ++block) {
    wgmma_k16<kTokens, kDescriptorHigh<kCoreMatrixNStep>>(accumulators, fragments[block],
                                                          first_descriptor + block * std::uint32_t(packed_block_bytes(kTokens) >> 4));
  }
}
// The same from the activations' shared address.
template <int kTokens>
__device__ __forceinline__ void issue_chunk_wgmmas(float (&accumulators)[kTokens / 2], const std::uint32_t (&fragments)[kBlocksPerChunk][4],
                                                   std::uint32_t activation_address) {
  issue_chunk_wgmmas_at<kTokens>(accumulators, fragments, activation_descriptor(activation_address));
}

// One step of a consumer warpgroup's main loop: the chunk's four wgmmas on fragments `current`
// against the activations whose first descriptor word is `descriptor`, then the retirement of the
// group kInFlight chunks older (its stage and fragment set are free after this). The accumulators
// are pinned on both sides, so that ptxas moves none of their uses across the asynchronous MMAs.
template <int kTokens, int kInFlight>
__device__ __forceinline__ void issue_chunk_and_retire_older(float (&accumulators)[kTokens / 2],
                                                             const std::uint32_t (&current)[kBlocksPerChunk][4],
                                                             std::uint32_t descriptor) {
#pragma unroll
  for (int i = 0; i < kTokens / 2; ++i) pin_register(accumulators[i]);
  wgmma_fence();
  issue_chunk_wgmmas_at<kTokens>(accumulators, current, descriptor);
  wgmma_commit();
  wgmma_wait<kInFlight>();
#pragma unroll
  for (int i = 0; i < kTokens / 2; ++i) pin_register(accumulators[i]);
}

template <class T, int kTokens, class Owned>
__device__ __forceinline__ void store_accumulator_quads_as(const KernelProblem& args, const float (&sums)[kTokens / 2],
                                                           std::int64_t row, float scale, Owned owned) {
  const int pair = 2 * (threadIdx.x % 4);
  const bool low = row < args.n, high = row + 8 < args.n;
  T* const out = static_cast<T*>(args.out) + std::int64_t(pair) * args.out_stride + row;
#pragma unroll
  for (int quad = 0; quad < kTokens / 8; ++quad) {
    if (!owned(quad)) continue;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      if (8 * quad + pair + h >= args.m) continue;
      T* const at = out + std::int64_t(8 * quad + h) * args.out_stride;
      if (low) at[0] = output_value<T>(scale * sums[4 * quad + h]);
      if (high) at[8] = output_value<T>(scale * sums[4 * quad + 2 + h]);
    }
  }
}

// Stores a consumer lane's accumulators, times `scale`, straight from registers in the wgmma D
// layout: quad q (floats 4q .. 4q + 3) holds tokens 8q + 2t and 8q + 2t + 1 (t = lane % 4) of weight
// row `row` (floats 0, 1) and of row + 8 (floats 2, 3). Only the quads `owned(q)` says, tokens
// below M and rows below N are stored. Each store is 8 rows of one token (16 or 32 contiguous
// bytes per warp and token) instead of a coalesced row of the output, but the epilogue is then a
// few dozen independent instructions per lane: the transpose through shared memory it replaces
// ran ~560 dependent ones per warp, ~3 us a call at 64 tokens (H200,
//).
template <int kTokens, class Owned>
__device__ __forceinline__ void store_accumulator_quads(const KernelProblem& args, const float (&sums)[kTokens / 2], std::int64_t row,
                                                        float scale, Owned owned) {
  switch (args.out_dtype) {
    case DType::f32: store_accumulator_quads_as<float, kTokens>(args, sums, row, scale, owned); break;
    case DType::bf16: store_accumulator_quads_as<__nv_bfloat16, kTokens>(args, sums, row, scale, owned); break;
    case DType::f16: store_accumulator_quads_as<__half, kTokens>(args, sums, row, scale, owned); break;
  }
}

#endif  // FP4GEMM_SM90A_DEVICE

}  // namespace fp4gemm::cuda_nvfp4
