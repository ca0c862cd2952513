#pragma once
// What the two tensor-core expert kernels of `cuda_moe` share (cuda_moe_mma.cu: weights loaded
// into registers; cuda_moe_mma_bulk.cu: weights through a shared-memory ring of bulk copies): the
// warp's tile of weight rows, the decode of one 64-column chunk onto mma.sync.m16n8k16, the
// activation loads and the epilogue that adds the warps' K splits and stores h or y.
//
// out^T = W · A^T: weight rows are the MMA's M (a warp owns two 16-row tiles: gate_up's gate rows
// i..i+15 and the up rows beside them, or down's rows r..r+31), an expert's entries its N (8 per
// MMA, 1, 2 or 4 tiles held at once), K is split over the block's kMmaWarpsK warps and their
// sums are added in shared memory in a fixed order.
//
// Per 64-column chunk, lane (g = lane / 4, t = lane % 4) holds the 16 codes of rows g and g + 8 at
// columns 16t..16t+15, one NVFP4 block each, so one scale per row and chunk. A sum over K does not
// care about order, so the MMA's k-slots are assigned to those columns as decoding likes best:
// fragment register (k-slots 2t, 2t+1) of block b takes the column pair (c, c + 4) of one 32-bit
// code word, whose two nibbles are 16 bits apart as BF16x2 lanes are (pair_bits); the activations
// are paired the same way with one byte permute per register.
//
// Decode trick (cuda_common/bf16_mma_decode.cuh): a nibble s|e1 e0 m placed at BF16 bits
// 15 | 8 7 6 is value·2^-126; multiplied by the scale·2^118 from the shared table it is
// value·scale·2^-8, exactly; the epilogue multiplies by 2^8 and the global scale.
//
// When x is BF16 the layer rounds h to BF16 (as the reference does), so gate_up stores h as BF16
// and down reads it so: half the bytes of FP32 h, and the MMA's operand type.
// CUDA sources only.
#include <cuda_bf16.h>

#include "backends/cuda_common/bf16_mma_decode.cuh"
#include "moe/cuda_moe/cuda_moe_grouping.cuh"
#include "moe/cuda_moe/cuda_moe_shape.hpp"

namespace fp4gemm::moe::cuda_moe::mma_tile {

constexpr int kThreads = kMmaWarpsK * 32;
constexpr int kChunk = 64;         // columns per chunk: 4 MMA blocks of 16
constexpr int kLaneColumns = 16;   // a lane's columns of a chunk: one NVFP4 block
constexpr int kTilesPerWarp = 2;   // weight tiles of 16 rows a warp owns
constexpr int kRowsPerWarp = 16 * kTilesPerWarp;

// Nibbles `pair` and `pair` + 4 of a code word (columns c and c + 4) as BF16x2 bits of value·2^-126:
// code bits 0-2 go to BF16 bits 6-8, bit 3 to bit 15, in both 16-bit lanes at once.
__device__ __forceinline__ std::uint32_t pair_bits(std::uint32_t word, int pair) {
  const int shift = 6 - 4 * pair;  // low bits; the sign moves 6 further
  const std::uint32_t low = shift >= 0 ? word << shift : word >> -shift;
  const std::uint32_t sign = shift + 6 >= 0 ? word << (shift + 6) : word >> -(shift + 6);
  return (low & 0x01C001C0u) | (sign & 0x80008000u);
}

// A warp's weights of one chunk: per tile, rows g and g + 8 (16 codes each) and their scales
// (row g in byte 0, row g + 8 in byte 1, as lookup_row_scales takes them).
struct ChunkWeights {
  uint2 codes[kTilesPerWarp][2];
  std::uint32_t scales[kTilesPerWarp];
};

// The lane's 16 activations of a chunk for one entry tile: 8 BF16x2 words (columns 2j, 2j + 1).
struct ChunkActivations {
  uint4 low, high;
};

// Where a block's weight rows are: `first_out` its first output (gate_up: 16 outputs, gate and up
// rows; down: 32 rows); the expert's matrix is `out_rows` outputs (gate_up: 2·out_rows rows).
template <bool kGateUp>
struct BlockRows {
  std::int64_t first_out = 0, out_rows = 0;
  // The stacked row of the warp's tile row `row_in_warp` (0..31: tile = row_in_warp / 16). Rows past
  // the end read the last row; their sums are never stored.
  __device__ __forceinline__ std::int64_t stacked_row(std::int64_t expert, std::int64_t expert_rows, int row_in_warp) const {
    const int tile = row_in_warp / 16, row_in_tile = row_in_warp % 16;
    const std::int64_t local = min(first_out + (kGateUp ? 0 : 16 * tile) + row_in_tile, out_rows - 1) + (kGateUp ? tile * out_rows : 0);
    return expert * expert_rows + local;
  }
};

// One chunk: 4 MMA blocks per tile and entry tile. Block b reads code word b / 2 (columns
// 8(b/2)..8(b/2)+7 of the lane's 16) and its column pairs (p, p + 4) for p = 2(b % 2) (k-slots
// 2t, 2t + 1) and p + 1 (k-slots 2t + 8, 2t + 9).
template <int kEntryTiles>
__device__ __forceinline__ void compute_chunk(const ChunkWeights& w, const ChunkActivations (&a)[kEntryTiles],
                                              const std::uint32_t* scale_table,
                                              float (&acc)[kTilesPerWarp][kEntryTiles][4]) {
#pragma unroll
  for (int tile = 0; tile < kTilesPerWarp; ++tile) {
    const cuda::RowScales scales = cuda::lookup_row_scales(w.scales[tile], scale_table);
#pragma unroll
    for (int block = 0; block < 4; ++block) {
      const std::uint32_t g = block < 2 ? w.codes[tile][0].x : w.codes[tile][0].y;
      const std::uint32_t g8 = block < 2 ? w.codes[tile][1].x : w.codes[tile][1].y;
      const int pair = 2 * (block % 2);
      const std::uint32_t fragment[4] = {cuda::bf16x2_mul(pair_bits(g, pair), scales.g), cuda::bf16x2_mul(pair_bits(g8, pair), scales.g8),
                                         cuda::bf16x2_mul(pair_bits(g, pair + 1), scales.g),
                                         cuda::bf16x2_mul(pair_bits(g8, pair + 1), scales.g8)};
#pragma unroll
      for (int n = 0; n < kEntryTiles; ++n) {
        const uint4& words = block < 2 ? a[n].low : a[n].high;
        // Columns p and p + 4 are words (p / 2, p / 2 + 2): low halves for even p, high for odd.
        const std::uint32_t first = block % 2 == 0 ? words.x : words.y, second = block % 2 == 0 ? words.z : words.w;
        cuda::mma_bf16_m16n8k16(acc[tile][n], fragment, __byte_perm(first, second, 0x5410), __byte_perm(first, second, 0x7632));
      }
    }
  }
}

// The lane's activation row of each entry tile of the pass starting at entry `first` (B's column
// g), at its columns of chunk 0; null past the group (zeros).
template <int kEntryTiles>
__device__ __forceinline__ void entry_sources(const DeviceRows& input, const Grouping& grouping, const GroupEntries& group,
                                              std::int64_t first, int g, int t, const __nv_bfloat16* (&source)[kEntryTiles]) {
  const auto* x = static_cast<const __nv_bfloat16*>(input.data);
#pragma unroll
  for (int n = 0; n < kEntryTiles; ++n) {
    const std::int64_t entry = first + 8 * n + g;
    source[n] = nullptr;
    if (entry < group.end) {
      const std::int64_t token = grouping.entry_token != nullptr ? grouping.entry_token[entry] : entry;
      source[n] = x + token * input.stride + t * kLaneColumns;
    }
  }
}

// The lane's activations of chunk `chunk` for each entry tile (zeros where `in_k` is false or the
// entry is past the group).
template <int kEntryTiles>
__device__ __forceinline__ void load_activations(const __nv_bfloat16* const (&source)[kEntryTiles], int chunk, bool in_k,
                                                 ChunkActivations (&a)[kEntryTiles]) {
#pragma unroll
  for (int n = 0; n < kEntryTiles; ++n) {
    if (in_k && source[n] != nullptr) {
      const uint4* p = reinterpret_cast<const uint4*>(source[n] + std::int64_t(chunk) * kChunk);
      a[n].low = __ldg(p);
      a[n].high = __ldg(p + 1);
    } else {
      a[n].low = a[n].high = make_uint4(0, 0, 0, 0);
    }
  }
}

// Shared memory of the epilogue: warps that hold a K split other than their row group's first
// leave their sums here ([slot][value][lane]: no bank conflicts).
template <int kEntryTiles>
using PartialSums = float[kMmaWarpsK - 1][kTilesPerWarp * kEntryTiles * 4][32];

// Adds the K-split sums of each row group (kMmaWarpsK / kWarpsK groups of kWarpsK consecutive
// warps; the group's warps 1.. through `partial`, in warp order) and the group's first warp stores
// the pass's outputs at `rows`: gate_up h (BF16) = SiLU(gate)·up, down y (FP32). Every thread of
// the block calls it; with K split it ends with a barrier, so `partial` is free for the next pass.
template <bool kGateUp, int kEntryTiles, int kWarpsK = kMmaWarpsK>
__device__ __forceinline__ void reduce_and_store(float (&acc)[kTilesPerWarp][kEntryTiles][4], PartialSums<kEntryTiles>& partial,
                                                 const BlockRows<kGateUp>& rows, const GroupEntries& group, std::int64_t first,
                                                 float scale_a, float scale_b, void* __restrict__ out) {
  static_assert(kMmaWarpsK % kWarpsK == 0, "whole row groups a block");
  constexpr int kValues = kTilesPerWarp * kEntryTiles * 4;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int split = warp % kWarpsK, slot0 = warp / kWarpsK * (kWarpsK - 1);
  if constexpr (kWarpsK > 1) {
    if (split > 0) {
#pragma unroll
      for (int v = 0; v < kValues; ++v) partial[slot0 + split - 1][v][lane] = (&acc[0][0][0])[v];
    }
    __syncthreads();
  }
  if (split == 0) {
#pragma unroll
    for (int other = 0; other < kWarpsK - 1; ++other)
#pragma unroll
      for (int v = 0; v < kValues; ++v) (&acc[0][0][0])[v] += partial[slot0 + other][v][lane];
    // Accumulator i of an entry tile: row g (i < 2) or g + 8, entry 2t + i % 2.
#pragma unroll
    for (int n = 0; n < kEntryTiles; ++n) {
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const std::int64_t entry = first + 8 * n + 2 * t + i % 2;
        if (entry >= group.end) continue;
        const int row_in_tile = g + 8 * (i / 2);
        if constexpr (kGateUp) {
          const std::int64_t feature = rows.first_out + row_in_tile;
          if (feature >= rows.out_rows) continue;
          const float gate = acc[0][n][i] * cuda::kDecodeCompensation * scale_a, up = acc[1][n][i] * cuda::kDecodeCompensation * scale_b;
          static_cast<__nv_bfloat16*>(out)[entry * rows.out_rows + feature] = __float2bfloat16_rn(silu_mul(gate, up, true));
        } else {
#pragma unroll
          for (int tile = 0; tile < kTilesPerWarp; ++tile) {
            const std::int64_t row = rows.first_out + 16 * tile + row_in_tile;
            if (row < rows.out_rows) {
              static_cast<float*>(out)[entry * rows.out_rows + row] = acc[tile][n][i] * cuda::kDecodeCompensation * scale_a;
            }
          }
        }
      }
    }
  }
  if constexpr (kWarpsK > 1) __syncthreads();  // partial is reused by the next pass
}

}  // namespace fp4gemm::moe::cuda_moe::mma_tile
