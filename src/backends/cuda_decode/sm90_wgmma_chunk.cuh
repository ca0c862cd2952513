#pragma once
// What the consumer warps of the two wgmma kernels (sm90_wgmma_gemm.cu, sm90_resident_gemm.cu) do
// with one 64-wide chunk: decode a 16-row tile from a shared-memory weight stage into four A
// fragments, and issue the warpgroup's four wgmma.m64nTk16 against the chunk's packed activations;
// and how both store a CTA's slice of a row block's outputs.
#include <cstdint>

#include "backends/cuda_decode/activation_pack_layout.hpp"
#include "backends/cuda_decode/decode_device.cuh"
#include "backends/cuda_decode/kernel_problem.hpp"
#include "backends/cuda_decode/sm90_async_ops.cuh"

namespace fp4gemm::cuda_decode {

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

// A weight stage holds the codes of the CTA's tiles (kTileCodeBytes each, decode_layout.hpp), then
// their scales at `scale_offset`. Warp `warp` decodes tile `warp`.
__device__ __forceinline__ void decode_stage_tile(const std::uint8_t* stage, int scale_offset, int warp, int lane,
                                                  const std::uint32_t* scale_table, std::uint32_t (&fragments)[kBlocksPerChunk][4]) {
  const std::uint32_t stage_address = shared_address(stage);
  decode_tile_at(stage_address + warp * kTileCodeBytes + lane * 16, stage_address + scale_offset + warp * kTileScaleBytes + lane * 2,
                 shared_address(scale_table), fragments);
}

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

// Stores `outputs` outputs of this CTA's slice of a row block: `slice_rows` weight rows (a power of
// two) times the tokens, output `index` being row first_row + index % slice_rows and token
// index / slice_rows, valued scale * sum_of(index % slice_rows, index / slice_rows). The
// first `threads` threads of the CTA take part. Consecutive threads take consecutive rows, so
// stores along N coalesce; each thread gathers kEpilogueBatch sums before storing any (a load that
// followed a store through the generic output pointer would wait for it, one at a time).
template <int kThreads, class SumOf>
__device__ __forceinline__ void store_row_slice(const KernelProblem& args, int outputs, int slice_rows, std::int64_t first_row,
                                                float scale, SumOf sum_of) {
  const int slice_shift = __ffs(slice_rows) - 1;
  constexpr int kEpilogueBatch = 4;
  for (int first = threadIdx.x; first < outputs; first += kThreads * kEpilogueBatch) {
    float sums[kEpilogueBatch];
#pragma unroll
    for (int j = 0; j < kEpilogueBatch; ++j) {
      const int index = first + j * kThreads;
      sums[j] = index < outputs ? sum_of(index & (slice_rows - 1), index >> slice_shift) : 0.0f;
    }
#pragma unroll
    for (int j = 0; j < kEpilogueBatch; ++j) {
      const int index = first + j * kThreads;
      const std::int64_t n = first_row + (index & (slice_rows - 1));
      if (index < outputs && n < args.n)
        store_output(args.out, std::int64_t(index >> slice_shift) * args.out_stride + n, args.out_dtype, scale * sums[j]);
    }
  }
}

#endif  // FP4GEMM_SM90A_DEVICE

}  // namespace fp4gemm::cuda_decode
