#pragma once
// Activations for the wgmma kernel (sm90_nvfp4_wgmma_gemm.cu), packed once per call into the image its
// shared-memory operand B reads, so that every pipeline stage is one contiguous bulk copy.
//
// The wgmma kernel computes out^T = W * A^T like the mma.sync one: weight rows are the MMA's M
// dimension and take the same decode layout (weight_layout.hpp), activation rows ("tokens") are
// its N dimension, padded with zero rows to `tokens` (16, 32 or 64). K carries the same
// permutation inside each 64-wide chunk: k-slot s of MMA block b holds chunk column
// 16 * (s % 8 / 2) + 4 * b + s % 2 + 2 * (s / 8).
//
// packed: [chunks][4 blocks][tokens / 8][2 k-halves][8 tokens][8 k-slots] BF16. The innermost
// 8 x 8 is a wgmma "core matrix" (8 rows of 16 bytes, 128 contiguous bytes, no swizzle); core
// matrices are 128 bytes apart along K (the two halves of a block's 16 slots) and 256 bytes apart
// along the tokens. A chunk is tokens * 128 bytes; columns past K are zeros, like the weight's.
#include <cstdint>

#include "backends/cuda_nvfp4/weight_layout.hpp"

namespace fp4gemm::cuda_nvfp4 {

inline constexpr int kCoreMatrixKStep = 128;  // bytes between the two k-halves of a token group
inline constexpr int kCoreMatrixNStep = 256;  // bytes between token groups

constexpr std::int64_t packed_chunk_bytes(int tokens) { return std::int64_t(tokens) * kChunkK * 2; }
constexpr std::int64_t packed_block_bytes(int tokens) { return std::int64_t(tokens) * 16 * 2; }

// Byte offset, inside a chunk, of token `token`'s chunk column `column` (0..63). Host and device.
#if defined(__CUDACC__)
__host__ __device__
#endif
constexpr int packed_offset(int tokens, int token, int column) {
  const int lane_block = column / 16, block = column % 16 / 4, low = column % 2, high = column % 4 / 2;
  const int slot = 2 * lane_block + low;  // 0..7 inside the k-half `high`
  return block * int(packed_block_bytes(tokens)) + (token / 8) * kCoreMatrixNStep + high * kCoreMatrixKStep +
         (token % 8) * 16 + slot * 2;
}

}  // namespace fp4gemm::cuda_nvfp4
