// The tensor-core expert kernel of `cuda_moe` with the weights loaded straight into registers:
// gate_up (+ SiLU·mul) or down over every active expert in one launch, for NVFP4 experts and BF16
// activations, on mma.sync.m16n8k16 (BF16 in, FP32 accumulate). E2M1 x E4M3 is exact in BF16, so
// the products are those of the CUDA-core kernels; only the order of the FP32 sums differs. The
// tile, decode and epilogue are cuda_moe_mma_tile.cuh's; this kernel reads the weights in the
// stacked linear layout that the other kernels read (no second copy), a lane issuing the loads of
// kMmaBatchChunks chunks before using any. It runs on SM 8.0 and newer, at any K (a multiple of 16).
#include "backends/cuda_common/cuda_check.hpp"
#include "backends/cuda_common/streaming_loads.cuh"
#include "moe/cuda_moe/cuda_moe_mma.hpp"
#include "moe/cuda_moe/cuda_moe_mma_tile.cuh"

namespace fp4gemm::moe::cuda_moe {
namespace {

using namespace mma_tile;

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

// kGateUp: h (BF16) = SiLU(gate)·up; else y (FP32) = h·downᵀ. Block (x, y): rows tile x of the
// y-th active group, its warps splitting K.
template <bool kGateUp, int kEntryTiles>
__global__ void __launch_bounds__(kThreads, kMmaBlocksPerSm)
mma_expert_kernel(StackedExperts weights, DeviceRows input, Grouping grouping, void* __restrict__ out) {
  static_assert(kEntryTiles <= kMmaMaxEntryTiles && kMmaBatchChunks % kEntryTiles == 0, "whole chunks per batch");
  constexpr int kBatch = kMmaBatchChunks / kEntryTiles;
  __shared__ std::uint32_t scale_table[256];
  __shared__ PartialSums<kEntryTiles> partial;

  GroupEntries group;
  if (!block_group(grouping, group)) return;
  cuda::fill_scale_table(scale_table, threadIdx.x, kThreads);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const BlockRows<kGateUp> block_rows{std::int64_t(blockIdx.x) * mma_rows_per_block(kGateUp), kGateUp ? weights.rows / 2 : weights.rows};
  const std::int64_t cols = weights.cols;
  TileRows rows;
#pragma unroll
  for (int tile = 0; tile < kTilesPerWarp; ++tile) {
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const std::int64_t row = block_rows.stacked_row(group.expert, weights.rows, 16 * tile + g + 8 * half);
      rows.codes[tile][half] = weights.codes + row * (cols / 2) + t * (kLaneColumns / 2);
      rows.scales[tile][half] = weights.scales + row * (cols / 16) + t;
    }
  }
  const float scale_a = weights.global_scales[kGateUp ? 2 * group.expert : group.expert];
  const float scale_b = kGateUp ? weights.global_scales[2 * group.expert + 1] : 0.0f;
  const int chunks = int((cols + kChunk - 1) / kChunk);
  const int chunk_begin = chunks * warp / kMmaWarpsK, chunk_end = chunks * (warp + 1) / kMmaWarpsK;
  __syncthreads();  // the scale table

  for (std::int64_t first = group.begin; first < group.end; first += 8 * kEntryTiles) {
    const __nv_bfloat16* source[kEntryTiles];
    entry_sources<kEntryTiles>(input, grouping, group, first, g, t, source);
    float acc[kTilesPerWarp][kEntryTiles][4] = {};
    for (int chunk0 = chunk_begin; chunk0 < chunk_end; chunk0 += kBatch) {
      ChunkWeights w[kBatch];
      ChunkActivations a[kBatch][kEntryTiles];
#pragma unroll
      for (int b = 0; b < kBatch; ++b) {
        const int chunk = chunk0 + b;
        const bool in_k = chunk < chunk_end && std::int64_t(chunk) * kChunk + t * kLaneColumns < cols;
        load_chunk(rows, chunk, in_k, w[b]);
        load_activations<kEntryTiles>(source, chunk, in_k, a[b]);
      }
#pragma unroll
      for (int b = 0; b < kBatch; ++b) compute_chunk<kEntryTiles>(w[b], a[b], scale_table, acc);
    }
    reduce_and_store<kGateUp, kEntryTiles>(acc, partial, block_rows, group, first, scale_a, scale_b, out);
  }
}

template <bool kGateUp, int kEntryTiles>
void launch_tiles(const StackedExperts& weights, const DeviceRows& input, const Grouping& grouping, void* out,
                  cudaStream_t stream) {
  const std::int64_t out_rows = kGateUp ? weights.rows / 2 : weights.rows;
  const dim3 grid(unsigned(mma_row_blocks(out_rows, kGateUp)), unsigned(grouping.expert_slots));
  mma_expert_kernel<kGateUp, kEntryTiles><<<grid, kThreads, 0, stream>>>(weights, input, grouping, out);
}

template <bool kGateUp>
void launch(const StackedExperts& weights, const DeviceRows& input, const Grouping& grouping, int entry_tiles, void* out,
            cudaStream_t stream, const char* what) {
  const std::int64_t out_rows = kGateUp ? weights.rows / 2 : weights.rows;
  if (out_rows == 0 || grouping.expert_slots == 0) return;
  switch (entry_tiles) {
    case 4: launch_tiles<kGateUp, 4>(weights, input, grouping, out, stream); break;
    case 2: launch_tiles<kGateUp, 2>(weights, input, grouping, out, stream); break;
    default: launch_tiles<kGateUp, 1>(weights, input, grouping, out, stream); break;
  }
  cuda::check_launch(what);
}

}  // namespace

bool mma_takes(const StackedExperts& weights, const DeviceRows& x) {
  return weights.dense == nullptr && x.bf16 && reinterpret_cast<std::uintptr_t>(x.data) % 16 == 0 && x.stride % 8 == 0;
}

void launch_mma_gate_up(const StackedExperts& weights, const DeviceRows& x, const Grouping& grouping, int entry_tiles,
                        __nv_bfloat16* h, cudaStream_t stream) {
  launch<true>(weights, x, grouping, entry_tiles, h, stream, "cuda_moe: launching the tensor-core gate_up kernel");
}

void launch_mma_down(const StackedExperts& weights, const __nv_bfloat16* h, const Grouping& grouping, int entry_tiles,
                     float* y, cudaStream_t stream) {
  launch<false>(weights, mma_down_input(weights, h), mma_down_grouping(grouping), entry_tiles, y, stream,
                "cuda_moe: launching the tensor-core down kernel");
}

}  // namespace fp4gemm::moe::cuda_moe
