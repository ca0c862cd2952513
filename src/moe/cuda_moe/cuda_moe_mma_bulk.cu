// The tensor-core expert kernel of `cuda_moe` with the weights streamed through shared memory: the
// tile, decode and epilogue of cuda_moe_mma_tile.cuh, but each warp's weight rows arrive by bulk
// copies (cp.async.bulk, the TMA engine without a tensor map) into a ring of `ring_stages` stages
// of kMmaBulkStageColumns columns in shared memory, each stage completing on its own mbarrier.
//
// Why: the register kernel (cuda_moe_mma.cu) can hold only kMmaBatchChunks chunks of loads per
// lane before it must use them, and on the H200 at T = 1 its warps waited on memory with DRAM at
// 26-29 % of peak. Here a warp's next stages are in flight while it decodes the current one, and a
// copy costs one instruction per row instead of one load per lane and row.
//
// A warp's 32 weight rows (lane i copies row i: its codes and its scales of the stage) land at a
// row stride of kCodeStride bytes: 128 code bytes plus 32 of padding, so the 8-byte code reads of
// a half-warp (rows g = 0..3, column groups t = 0..3) fall on 32 different banks. The stage's scales
// (16 bytes a row) follow the codes; a lane reads its two rows' scale rows once per stage.
// K is split in whole stages over kWarpsK warps (1, 2 or 4) of the block, whose kMmaWarpsK warps
// then cover kMmaWarpsK / kWarpsK row groups (16 gate_up outputs or 32 down rows each): fewer splits
// mean fewer, longer blocks and no partial sums. SM 9.0 only (the host checks).
#include "backends/cuda_common/cuda_check.hpp"
#include "backends/cuda_common/dynamic_shared_limit.hpp"
#include "backends/cuda_nvfp4/sm90_async_ops.cuh"
#include "moe/cuda_moe/cuda_moe_mma.hpp"
#include "moe/cuda_moe/cuda_moe_mma_tile.cuh"

namespace fp4gemm::moe::cuda_moe {
namespace {

using namespace mma_tile;

constexpr int kStageChunks = kMmaBulkStageColumns / kChunk;
constexpr int kCodeBytes = kMmaBulkStageColumns / 2;    // a row's codes in one stage
constexpr int kScaleBytes = kMmaBulkStageColumns / 16;  // a row's scales in one stage (16: one copy)
constexpr int kCodeStride = kCodeBytes + 32;            // bank-conflict-free 8-byte reads (see top)
constexpr int kScaleOffset = kRowsPerWarp * kCodeStride;
constexpr int kStageBytes = kScaleOffset + kRowsPerWarp * kScaleBytes;
static_assert(kScaleBytes % 16 == 0 && kCodeBytes % 16 == 0 && kCodeStride % 16 == 0 && kStageBytes % 16 == 0,
              "bulk copies move multiples of 16 bytes between 16-byte aligned addresses");
static_assert(kStageChunks == 4 && kScaleBytes == 16, "a lane's scale row of a stage is one 16-byte word per row");

std::size_t ring_bytes(int ring_stages) { return std::size_t(kMmaWarpsK) * std::size_t(ring_stages) * kStageBytes; }

#if FP4GEMM_SM90A_DEVICE
// The scale bytes of rows g and g + 8 for chunk j of the stage (bytes 0 and 1, as
// lookup_row_scales takes them): byte 4j + t of each row's 16-byte scale row.
__device__ __forceinline__ std::uint32_t chunk_scales(const uint4& row_g, const uint4& row_g8, int j, std::uint32_t selector) {
  const std::uint32_t word_g = j == 0 ? row_g.x : j == 1 ? row_g.y : j == 2 ? row_g.z : row_g.w;
  const std::uint32_t word_g8 = j == 0 ? row_g8.x : j == 1 ? row_g8.y : j == 2 ? row_g8.z : row_g8.w;
  return __byte_perm(word_g, word_g8, selector);
}
#endif

// Asks L1 for the activation line (64 columns: one chunk of one entry row) of chunk `chunk` of each
// of the lane's entry rows. The ring takes most of the SM's L1 as shared memory, so the loads of a
// stage's activations would otherwise wait on L2 (on an H100 at T = 1 that stall dominated).
template <int kEntryTiles>
__device__ __forceinline__ void prefetch_activations(const __nv_bfloat16* const (&source)[kEntryTiles], int chunk, int t) {
#pragma unroll
  for (int n = 0; n < kEntryTiles; ++n) {
    if (source[n] != nullptr) {
      const __nv_bfloat16* line = source[n] - t * kLaneColumns + std::int64_t(chunk) * kChunk;
      asm volatile("prefetch.global.L1 [%0];" ::"l"(line));
    }
  }
}

template <bool kGateUp, int kEntryTiles, int kWarpsK>
__global__ void __launch_bounds__(kThreads, kMmaBulkBlocksPerSm)
mma_bulk_expert_kernel(StackedExperts weights, DeviceRows input, Grouping grouping, int ring_stages, void* __restrict__ out) {
#if FP4GEMM_SM90A_DEVICE
  using namespace cuda_nvfp4;
  extern __shared__ __align__(128) std::uint8_t ring[];
  __shared__ std::uint64_t full[kMmaWarpsK][kMmaBulkMaxRingStages];
  __shared__ std::uint32_t scale_table[256];
  __shared__ PartialSums<kEntryTiles> partial;

  GroupEntries group;
  if (!block_group(grouping, group)) return;
  cuda::fill_scale_table(scale_table, threadIdx.x, kThreads);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  constexpr int kRowGroups = kMmaWarpsK / kWarpsK;
  const int split = warp % kWarpsK;
  const std::int64_t row_group = std::int64_t(blockIdx.x) * kRowGroups + warp / kWarpsK;
  const BlockRows<kGateUp> block_rows{row_group * mma_rows_per_block(kGateUp), kGateUp ? weights.rows / 2 : weights.rows};
  const std::int64_t cols = weights.cols;
  const int stages = int(cols / kMmaBulkStageColumns);
  const int stage_begin = stages * split / kWarpsK, my_stages = stages * (split + 1) / kWarpsK - stage_begin;
  const std::int64_t passes = (group.end - group.begin + 8 * kEntryTiles - 1) / (8 * kEntryTiles);
  const std::int64_t loads = my_stages * passes;  // load q: stage stage_begin + q % my_stages, slot q % ring_stages

  // Lane i copies the warp's row i.
  const std::int64_t copy_row = block_rows.stacked_row(group.expert, weights.rows, lane);
  const std::uint8_t* copy_codes = weights.codes + copy_row * (cols / 2) + std::int64_t(stage_begin) * kCodeBytes;
  const std::uint8_t* copy_scales = weights.scales + copy_row * (cols / 16) + std::int64_t(stage_begin) * kScaleBytes;
  std::uint8_t* warp_ring = ring + std::size_t(warp) * std::size_t(ring_stages) * kStageBytes;
  const std::uint32_t ring_address = shared_address(warp_ring), full_address = shared_address(&full[warp][0]);
  if (lane == 0) {
    for (int slot = 0; slot < ring_stages; ++slot) mbarrier_init(&full[warp][slot], 1);
    fence_barrier_init();
  }
  __syncwarp();
  const auto issue = [&](std::int64_t q) {
    const int slot = int(q % ring_stages), stage = int(q % my_stages);
    const std::uint32_t barrier = full_address + 8u * unsigned(slot);
    if (lane == 0) mbarrier_arrive_expect_bytes(barrier, kRowsPerWarp * (kCodeBytes + kScaleBytes));
    __syncwarp();
    const std::uint32_t destination = ring_address + unsigned(slot) * kStageBytes;
    bulk_copy_to_shared(destination + unsigned(lane) * kCodeStride, copy_codes + std::int64_t(stage) * kCodeBytes, kCodeBytes, barrier);
    bulk_copy_to_shared(destination + kScaleOffset + unsigned(lane) * kScaleBytes, copy_scales + std::int64_t(stage) * kScaleBytes,
                        kScaleBytes, barrier);
  };
  for (std::int64_t q = 0; q < loads && q < ring_stages; ++q) issue(q);

  const float scale_a = weights.global_scales[kGateUp ? 2 * group.expert : group.expert];
  const float scale_b = kGateUp ? weights.global_scales[2 * group.expert + 1] : 0.0f;
  const std::uint32_t scale_selector = unsigned(t) | (unsigned(t + 4) << 4);
  __syncthreads();  // the scale table

  std::int64_t q = 0;
  for (std::int64_t first = group.begin; first < group.end; first += 8 * kEntryTiles) {
    const __nv_bfloat16* source[kEntryTiles];
    entry_sources<kEntryTiles>(input, grouping, group, first, g, t, source);
    float acc[kTilesPerWarp][kEntryTiles][4] = {};
    for (int s = 0; s < my_stages; ++s, ++q) {
      const int slot = int(q % ring_stages);
      const int chunk0 = (stage_begin + s) * kStageChunks;
      if (s + 1 < my_stages) prefetch_activations<kEntryTiles>(source, chunk0 + kStageChunks + t, t);
      mbarrier_wait(full_address + 8u * unsigned(slot), unsigned(q / ring_stages) & 1u);
      const std::uint8_t* stage = warp_ring + slot * kStageBytes;
      uint4 scale_rows[kTilesPerWarp][2];
#pragma unroll
      for (int tile = 0; tile < kTilesPerWarp; ++tile)
#pragma unroll
        for (int half = 0; half < 2; ++half)
          scale_rows[tile][half] = *reinterpret_cast<const uint4*>(stage + kScaleOffset + (16 * tile + g + 8 * half) * kScaleBytes);
      // Chunks unrolled as far as registers allow: each entry tile's activations take 8 a chunk.
#pragma unroll(kStageChunks / kEntryTiles)
      for (int j = 0; j < kStageChunks; ++j) {
        ChunkWeights w;
#pragma unroll
        for (int tile = 0; tile < kTilesPerWarp; ++tile) {
#pragma unroll
          for (int half = 0; half < 2; ++half) {
            w.codes[tile][half] = *reinterpret_cast<const uint2*>(stage + (16 * tile + g + 8 * half) * kCodeStride + j * (kChunk / 2) +
                                                                  t * (kLaneColumns / 2));
          }
          w.scales[tile] = chunk_scales(scale_rows[tile][0], scale_rows[tile][1], j, scale_selector);
        }
        ChunkActivations a[kEntryTiles];
        load_activations<kEntryTiles>(source, chunk0 + j, true, a);
        compute_chunk<kEntryTiles>(w, a, scale_table, acc);
      }
      __syncwarp();  // every lane has read the slot before it is refilled
      if (q + ring_stages < loads) issue(q + ring_stages);
    }
    reduce_and_store<kGateUp, kEntryTiles, kWarpsK>(acc, partial, block_rows, group, first, scale_a, scale_b, out);
  }
#endif
}

template <bool kGateUp, int kEntryTiles, int kWarpsK>
void launch_shape(const StackedExperts& weights, const DeviceRows& input, const Grouping& grouping, int ring_stages, void* out,
                  cudaStream_t stream, const char* what) {
  const auto kernel = mma_bulk_expert_kernel<kGateUp, kEntryTiles, kWarpsK>;
  constexpr int kRowGroups = kMmaWarpsK / kWarpsK;
  const int bytes = int(ring_bytes(ring_stages));
  cuda::check_cuda(cuda::raise_dynamic_shared_limit(reinterpret_cast<const void*>(kernel), bytes), what);
  const std::int64_t out_rows = kGateUp ? weights.rows / 2 : weights.rows;
  const dim3 grid(unsigned((mma_row_blocks(out_rows, kGateUp) + kRowGroups - 1) / kRowGroups), unsigned(grouping.expert_slots));
  kernel<<<grid, kThreads, bytes, stream>>>(weights, input, grouping, ring_stages, out);
}

template <bool kGateUp, int kEntryTiles>
void launch_tiles(const StackedExperts& weights, const DeviceRows& input, const Grouping& grouping, int k_splits, int ring_stages,
                  void* out, cudaStream_t stream, const char* what) {
  switch (k_splits) {
    case 1: launch_shape<kGateUp, kEntryTiles, 1>(weights, input, grouping, ring_stages, out, stream, what); break;
    case 2: launch_shape<kGateUp, kEntryTiles, 2>(weights, input, grouping, ring_stages, out, stream, what); break;
    default: launch_shape<kGateUp, kEntryTiles, 4>(weights, input, grouping, ring_stages, out, stream, what); break;
  }
}

template <bool kGateUp>
void launch(const StackedExperts& weights, const DeviceRows& input, const Grouping& grouping, const MmaBulkLaunch& shape,
            void* out, cudaStream_t stream, const char* what) {
  const std::int64_t out_rows = kGateUp ? weights.rows / 2 : weights.rows;
  if (out_rows == 0 || grouping.expert_slots == 0) return;
  const int k_splits = kGateUp ? shape.gate_up_k_splits : shape.down_k_splits;
  switch (shape.entry_tiles) {
    case 4: launch_tiles<kGateUp, 4>(weights, input, grouping, k_splits, shape.ring_stages, out, stream, what); break;
    case 2: launch_tiles<kGateUp, 2>(weights, input, grouping, k_splits, shape.ring_stages, out, stream, what); break;
    default: launch_tiles<kGateUp, 1>(weights, input, grouping, k_splits, shape.ring_stages, out, stream, what); break;
  }
  cuda::check_launch(what);
}

}  // namespace

bool mma_bulk_takes(const StackedExperts& weights, const DeviceRows& x, int sm) {
  return sm == 90 && mma_takes(weights, x) && weights.cols % kMmaBulkStageColumns == 0;
}

void launch_mma_bulk_gate_up(const StackedExperts& weights, const DeviceRows& x, const Grouping& grouping, const MmaBulkLaunch& shape,
                             __nv_bfloat16* h, cudaStream_t stream) {
  launch<true>(weights, x, grouping, shape, h, stream, "cuda_moe: launching the bulk-copy tensor-core gate_up kernel");
}

void launch_mma_bulk_down(const StackedExperts& weights, const __nv_bfloat16* h, const Grouping& grouping, const MmaBulkLaunch& shape,
                          float* y, cudaStream_t stream) {
  launch<false>(weights, mma_down_input(weights, h), mma_down_grouping(grouping), shape, y, stream,
                "cuda_moe: launching the bulk-copy tensor-core down kernel");
}

}  // namespace fp4gemm::moe::cuda_moe
