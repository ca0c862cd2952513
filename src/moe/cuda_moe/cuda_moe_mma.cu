// The tensor-core expert kernel of `cuda_moe`: gate_up (+ SiLU·mul) or down over every active
// expert in one launch, for NVFP4 experts and BF16 activations, on mma.sync.m16n8k16 (BF16 in,
// FP32 accumulate). E2M1 x E4M3 is exact in BF16, so the products are those of the CUDA-core
// kernels; only the order of the FP32 sums differs.
//
// out^T = W · A^T: weight rows are the MMA's M (a warp owns two 16-row tiles: gate_up's gate rows
// i..i+15 and the up rows beside them, or down's rows r..r+31), an expert's entries its N (8 per
// MMA, 1, 2 or 4 tiles held at once), K is split over the block's kWarpsK warps (kMmaWarpsK, or
// kMmaFewWarpsK for a short one-tile grid) and their sums are added in shared memory in a fixed
// order.
//
// The weights are read in the stacked layout that the other kernels read (no second copy): per
// 64-column chunk, lane (g = lane / 4, t = lane % 4) loads the 16 codes of rows g and g + 8 at
// columns 16t..16t+15, one NVFP4 block each, so one scale per row and chunk. A sum over K does not
// care about order, so the MMA's k-slots are assigned to those columns as decoding likes best:
// fragment register (k-slots 2t, 2t+1) of block b takes the column pair (c, c + 4) of one 32-bit
// code word, kept in fragment order so that cutting it costs 1-3 instructions (pair_bits,
// cuda_moe_code_order.hpp); the activations are paired the same way with one byte permute per
// register.
//
// Decode trick (cuda_common/bf16_mma_decode.cuh): a nibble s|e1 e0 m placed at BF16 bits
// 15 | 8 7 6 is value·2^-126; multiplied by the scale·2^118 from the shared table it is
// value·scale·2^-8, exactly; the epilogue multiplies by 2^8 and the global scale.
//
// When x is BF16 the layer rounds h to BF16 (as the reference does), so this gate_up stores h as
// BF16 and this down reads it so: half the bytes of FP32 h, and the MMA's operand type.
#include <cuda_bf16.h>

#include "backends/cuda_common/cuda_check.hpp"
#include "backends/cuda_common/bf16_mma_decode.cuh"
#include "backends/cuda_common/streaming_loads.cuh"
#include "moe/cuda_moe/cuda_moe_grouping.cuh"
#include "moe/cuda_moe/cuda_moe_launch.cuh"
#include "moe/cuda_moe/cuda_moe_mma.hpp"
#include "moe/cuda_moe/cuda_moe_code_order.hpp"
#include "moe/cuda_moe/cuda_moe_shape.hpp"

namespace fp4gemm::moe::cuda_moe {
namespace {

using cuda::bf16x2_mul;
using cuda::fill_scale_table;
using cuda::kDecodeCompensation;
using cuda::lookup_row_scales;
using cuda::RowScales;

constexpr int kChunk = 64;         // columns per chunk: 4 MMA blocks of 16
constexpr int kLaneColumns = 16;   // a lane's columns of a chunk: one NVFP4 block
constexpr int kTilesPerWarp = 2;   // weight tiles of 16 rows a warp owns

// A warp's weights of one chunk: per tile, rows g and g + 8 (16 codes each) and their scales
// (row g in byte 0, row g + 8 in byte 1, as lookup_row_scales takes them).
struct ChunkWeights {
  uint2 codes[kTilesPerWarp][2];
  std::uint32_t scales[kTilesPerWarp];
};

// Pointers to a lane's row g and g + 8 of each tile in chunk 0.
struct TileRows {
  const std::uint8_t* codes[kTilesPerWarp][2];
  const std::uint8_t* scales[kTilesPerWarp][2];
};

// The lane's 16 codes of one row in chunk `chunk` (8-byte aligned: K is a multiple of 16).
__device__ __forceinline__ uint2 load_codes(const std::uint8_t* row, int chunk) {
  return load_stream_8(reinterpret_cast<const uint2*>(row + chunk * (kChunk / 2)));
}

__device__ __forceinline__ void load_chunk(const TileRows& rows, int chunk, bool in_k, ChunkWeights& w) {
#pragma unroll
  for (int tile = 0; tile < kTilesPerWarp; ++tile) {
    if (in_k) {
      w.codes[tile][0] = load_codes(rows.codes[tile][0], chunk);
      w.codes[tile][1] = load_codes(rows.codes[tile][1], chunk);
      w.scales[tile] = __ldg(rows.scales[tile][0] + chunk * (kChunk / 16)) | (__ldg(rows.scales[tile][1] + chunk * (kChunk / 16)) << 8);
    } else {  // zero codes and scales: exact zeros
      w.codes[tile][0] = w.codes[tile][1] = make_uint2(0, 0);
      w.scales[tile] = 0;
    }
  }
}

// The lane's 16 activations of a chunk for one entry tile: 8 BF16x2 words (columns 2j, 2j + 1).
struct ChunkActivations {
  uint4 low, high;
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
    const RowScales scales = lookup_row_scales(w.scales[tile], scale_table);
#pragma unroll
    for (int block = 0; block < 4; ++block) {
      const std::uint32_t g = block < 2 ? w.codes[tile][0].x : w.codes[tile][0].y;
      const std::uint32_t g8 = block < 2 ? w.codes[tile][1].x : w.codes[tile][1].y;
      const int pair = 2 * (block % 2);
      const std::uint32_t fragment[4] = {bf16x2_mul(pair_bits(g, pair), scales.g), bf16x2_mul(pair_bits(g8, pair), scales.g8),
                                         bf16x2_mul(pair_bits(g, pair + 1), scales.g),
                                         bf16x2_mul(pair_bits(g8, pair + 1), scales.g8)};
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

// kGateUp: h (BF16) = SiLU(gate)·up; else y (FP32) = h·downᵀ. Block (x, y): rows tile x of the
// y-th active group, its kWarpsK warps splitting K (kMmaWarpsPerSm warps resident a SM either way).
// kPipelined: two register stages of half a batch each (mma_pipelined: 1 and 2 entry tiles), else
// one batch of kMmaBatchChunks / kEntryTiles chunks.
template <bool kGateUp, int kEntryTiles, bool kPipelined, int kWarpsK>
__global__ void __launch_bounds__(kWarpsK * 32, kMmaWarpsPerSm / kWarpsK)
mma_expert_kernel(StackedExperts weights, DeviceRows input, Grouping grouping, void* __restrict__ out) {
  static_assert(kEntryTiles <= kMmaMaxEntryTiles && kMmaBatchChunks % kEntryTiles == 0, "whole chunks per batch");
  constexpr int kBatch = kMmaBatchChunks / kEntryTiles;
  static_assert(!kPipelined || kBatch >= 2, "two stages need a batch of two chunks or more");
  constexpr int kStage = kPipelined ? kBatch / 2 : kBatch;
  constexpr int kValues = kTilesPerWarp * kEntryTiles * 4;
  __shared__ std::uint32_t scale_table[256];
  constexpr int kThreads = kWarpsK * 32;
  __shared__ float partial[kWarpsK - 1][kValues][32];  // [warp][value][lane]: no bank conflicts

  fill_scale_table(scale_table, threadIdx.x, kThreads);  // constant: before the wait
  enter_dependent_kernel();
  GroupEntries group;
  if (!block_group(grouping, group)) return;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const std::int64_t out_rows = kGateUp ? weights.rows / 2 : weights.rows;
  const std::int64_t cols = weights.cols;
  // gate_up: tile 0 the gate rows, tile 1 the up rows of the same 16 outputs; down: 32 rows.
  const std::int64_t first_out = std::int64_t(blockIdx.x) * mma_rows_per_block(kGateUp);
  TileRows rows;
#pragma unroll
  for (int tile = 0; tile < kTilesPerWarp; ++tile) {
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      // Rows past the end read the last row; their sums are never stored.
      const std::int64_t local = min(first_out + (kGateUp ? 0 : 16 * tile) + g + 8 * half, out_rows - 1) + (kGateUp ? tile * out_rows : 0);
      const std::int64_t row = group.expert * weights.rows + local;
      rows.codes[tile][half] = weights.codes + row * (cols / 2) + t * (kLaneColumns / 2);
      rows.scales[tile][half] = weights.scales + row * (cols / 16) + t;
    }
  }
  const float scale_a = weights.global_scales[kGateUp ? 2 * group.expert : group.expert];
  const float scale_b = kGateUp ? weights.global_scales[2 * group.expert + 1] : 0.0f;
  const int chunks = int((cols + kChunk - 1) / kChunk);
  const int chunk_begin = chunks * warp / kWarpsK, chunk_end = chunks * (warp + 1) / kWarpsK;
  const auto* x = static_cast<const __nv_bfloat16*>(input.data);
  __syncthreads();  // the scale table

  for (std::int64_t first = group.begin; first < group.end; first += 8 * kEntryTiles) {
    // The lane's activation row of each entry tile (B's column g); past the group: zeros.
    const __nv_bfloat16* source[kEntryTiles];
#pragma unroll
    for (int n = 0; n < kEntryTiles; ++n) {
      const std::int64_t entry = first + 8 * n + g;
      source[n] = nullptr;
      if (entry < group.end) {
        const std::int64_t token = grouping.entry_token != nullptr ? grouping.entry_token[entry] : entry;
        source[n] = x + token * input.stride + t * kLaneColumns;
      }
    }
    float acc[kTilesPerWarp][kEntryTiles][4] = {};
    // The loads of `kStage` chunks from `chunk0` (zeros past the warp's K range: no memory access).
    const auto load_stage = [&](ChunkWeights (&w)[kStage], ChunkActivations (&a)[kStage][kEntryTiles], int chunk0) {
#pragma unroll
      for (int b = 0; b < kStage; ++b) {
        const int chunk = chunk0 + b;
        const bool in_k = chunk < chunk_end && std::int64_t(chunk) * kChunk + t * kLaneColumns < cols;
        load_chunk(rows, chunk, in_k, w[b]);
#pragma unroll
        for (int n = 0; n < kEntryTiles; ++n) {
          if (in_k && source[n] != nullptr) {
            const uint4* p = reinterpret_cast<const uint4*>(source[n] + std::int64_t(chunk) * kChunk);
            a[b][n].low = __ldg(p);
            a[b][n].high = __ldg(p + 1);
          } else {
            a[b][n].low = a[b][n].high = make_uint4(0, 0, 0, 0);
          }
        }
      }
    };
    const auto compute_stage = [&](const ChunkWeights (&w)[kStage], const ChunkActivations (&a)[kStage][kEntryTiles]) {
#pragma unroll
      for (int b = 0; b < kStage; ++b) compute_chunk<kEntryTiles>(w[b], a[b], scale_table, acc);
    };
    ChunkWeights w0[kStage], w1[kStage];
    ChunkActivations a0[kStage][kEntryTiles], a1[kStage][kEntryTiles];
    if constexpr (kPipelined) {
      // Two register stages: the next stage's loads are in flight while this one is decoded.
      load_stage(w0, a0, chunk_begin);
      for (int chunk0 = chunk_begin; chunk0 < chunk_end; chunk0 += 2 * kStage) {
        load_stage(w1, a1, chunk0 + kStage);
        compute_stage(w0, a0);
        if (chunk0 + kStage >= chunk_end) break;
        load_stage(w0, a0, chunk0 + 2 * kStage);
        compute_stage(w1, a1);
      }
    } else {
      // One batch: its loads are all in flight, then it is decoded with nothing in flight.
      for (int chunk0 = chunk_begin; chunk0 < chunk_end; chunk0 += kStage) {
        load_stage(w0, a0, chunk0);
        compute_stage(w0, a0);
      }
    }

    // K splits: warps 1.. leave their sums in shared memory, warp 0 adds them in order and stores.
    if (warp > 0) {
#pragma unroll
      for (int v = 0; v < kValues; ++v) partial[warp - 1][v][lane] = (&acc[0][0][0])[v];
    }
    __syncthreads();
    if (warp == 0) {
#pragma unroll
      for (int other = 0; other < kWarpsK - 1; ++other)
#pragma unroll
        for (int v = 0; v < kValues; ++v) (&acc[0][0][0])[v] += partial[other][v][lane];
      // Accumulator i of an entry tile: row g (i < 2) or g + 8, entry 2t + i % 2.
#pragma unroll
      for (int n = 0; n < kEntryTiles; ++n) {
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const std::int64_t entry = first + 8 * n + 2 * t + i % 2;
          if (entry >= group.end) continue;
          const int row_in_tile = g + 8 * (i / 2);
          if constexpr (kGateUp) {
            const std::int64_t feature = first_out + row_in_tile;
            if (feature >= out_rows) continue;
            const float gate = acc[0][n][i] * kDecodeCompensation * scale_a, up = acc[1][n][i] * kDecodeCompensation * scale_b;
            static_cast<__nv_bfloat16*>(out)[entry * out_rows + feature] = __float2bfloat16_rn(silu_mul(gate, up, true));
          } else {
#pragma unroll
            for (int tile = 0; tile < kTilesPerWarp; ++tile) {
              const std::int64_t row = first_out + 16 * tile + row_in_tile;
              if (row < out_rows) static_cast<float*>(out)[entry * out_rows + row] = acc[tile][n][i] * kDecodeCompensation * scale_a;
            }
          }
        }
      }
    }
    __syncthreads();  // partial is reused by the next entry tiles
  }
}

template <bool kGateUp, int kEntryTiles, int kWarpsK>
void launch_tiles(const StackedExperts& weights, const DeviceRows& input, const Grouping& grouping, bool pipelined, void* out,
                  cudaStream_t stream, bool programmatic, const char* what) {
  const std::int64_t out_rows = kGateUp ? weights.rows / 2 : weights.rows;
  const dim3 grid(unsigned(mma_row_blocks(out_rows, kGateUp)), unsigned(grouping.expert_slots));
  if constexpr (kEntryTiles <= 2) {
    if (pipelined) {
      launch_kernel(mma_expert_kernel<kGateUp, kEntryTiles, true, kWarpsK>, grid, dim3(kWarpsK * 32), stream, programmatic, what,
                    weights, input, grouping, out);
      return;
    }
  }
  launch_kernel(mma_expert_kernel<kGateUp, kEntryTiles, false, kWarpsK>, grid, dim3(kWarpsK * 32), stream, programmatic, what,
                weights, input, grouping, out);
}

template <bool kGateUp>
void launch(const StackedExperts& weights, const DeviceRows& input, const Grouping& grouping, const MmaPass& pass, void* out,
            cudaStream_t stream, bool programmatic, const char* what) {
  const std::int64_t out_rows = kGateUp ? weights.rows / 2 : weights.rows;
  if (out_rows == 0 || grouping.expert_slots == 0) return;
  switch (pass.entry_tiles) {
    case 4: launch_tiles<kGateUp, 4, kMmaWarpsK>(weights, input, grouping, false, out, stream, programmatic, what); break;
    case 2: launch_tiles<kGateUp, 2, kMmaWarpsK>(weights, input, grouping, pass.pipelined, out, stream, programmatic, what); break;
    default:
      if (pass.warps_k == kMmaFewWarpsK) {
        launch_tiles<kGateUp, 1, kMmaFewWarpsK>(weights, input, grouping, pass.pipelined, out, stream, programmatic, what);
      } else if (pass.warps_k == 3) {  // FP4GEMM_MOE_MMA_WARPS_K=3, measured against the rule's 2 and 4
        launch_tiles<kGateUp, 1, 3>(weights, input, grouping, pass.pipelined, out, stream, programmatic, what);
      } else {
        launch_tiles<kGateUp, 1, kMmaWarpsK>(weights, input, grouping, pass.pipelined, out, stream, programmatic, what);
      }
      break;
  }
}

}  // namespace

bool mma_takes(const StackedExperts& weights, const DeviceRows& x) {
  return weights.dense == nullptr && x.bf16 && reinterpret_cast<std::uintptr_t>(x.data) % 16 == 0 && x.stride % 8 == 0;
}

void launch_mma_gate_up(const StackedExperts& weights, const DeviceRows& x, const Grouping& grouping, const MmaPass& pass,
                        __nv_bfloat16* h, cudaStream_t stream, bool programmatic) {
  launch<true>(weights, x, grouping, pass, h, stream, programmatic, "cuda_moe: launching the tensor-core gate_up kernel");
}

void launch_mma_down(const StackedExperts& weights, const __nv_bfloat16* h, const Grouping& grouping, const MmaPass& pass,
                     float* y, cudaStream_t stream, bool programmatic) {
  const DeviceRows input{h, true, weights.cols};
  Grouping by_entry = grouping;  // h is indexed by entry
  by_entry.entry_token = nullptr;
  launch<false>(weights, input, by_entry, pass, y, stream, programmatic, "cuda_moe: launching the tensor-core down kernel");
}

}  // namespace fp4gemm::moe::cuda_moe
