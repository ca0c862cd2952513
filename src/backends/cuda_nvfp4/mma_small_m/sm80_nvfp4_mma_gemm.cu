// NVFP4 x BF16 GEMM for small M (1..64): weights stream from HBM once, are decoded to BF16 in
// registers and multiplied on the tensor cores with mma.sync.m16n8k16 (FP32 accumulate).
// Hopper has no FP4 MMA, so this is the exact path: every e2m1 x e4m3 product is exact in BF16.
// The decode trick and its 2^-8 compensation: weight_decode.cuh.
#include <cooperative_groups.h>

#include <type_traits>

#include "backends/cuda_nvfp4/weight_decode.cuh"
#include "backends/cuda_nvfp4/weight_layout.hpp"
#include "backends/cuda_common/programmatic_launch.cuh"
#include "backends/cuda_nvfp4/mma_small_m/sm80_nvfp4_mma_gemm.cuh"

namespace fp4gemm::cuda_nvfp4 {
namespace {

// A warp's codes and scales of consecutive chunks are one record apart.
constexpr int kCodeStride = kRecordBytes / 16;   // in uint4
constexpr int kScaleStride = kRecordBytes / 2;   // in uint16
// A warp's second weight tile is one tile further into the record.
constexpr int kTileCodeStride = kTileCodeBytes / 16;   // in uint4
constexpr int kTileScaleStride = kTileScaleBytes / 2;  // in uint16

// The lane's 16 activations of one chunk and tile (its NVFP4 block's columns, weight_layout.hpp):
// the B fragment of MMA block b is words 2b, 2b+1, i.e. .x/.y or .z/.w of half b/2.
template <int kMTiles>
struct ActivationChunk {
  uint4 half[kMTiles][2];
};

// `rows[tile]` points at the chunk's first uint4 for the lane (64 BF16 columns per chunk = 8 uint4).
// Rows past M read row M-1 instead (their output columns are never stored), so no predicate is
// needed except past K.
template <int kMTiles>
__device__ __forceinline__ void load_activation_chunk(const uint4* const (&rows)[kMTiles], int offset, bool in_k,
                                                      ActivationChunk<kMTiles>& out) {
#pragma unroll
  for (int tile = 0; tile < kMTiles; ++tile) {
    out.half[tile][0] = in_k ? __ldg(rows[tile] + offset) : make_uint4(0, 0, 0, 0);
    out.half[tile][1] = in_k ? __ldg(rows[tile] + offset + 1) : make_uint4(0, 0, 0, 0);
  }
}

// One chunk: 4 MMA blocks, each decoded from one code word with the lane's two row scales.
template <int kMTiles, int kSets>
__device__ __forceinline__ void compute_chunk(const uint4& code_words, std::uint32_t scale_bytes, const std::uint32_t* scale_table,
                                              const ActivationChunk<kMTiles>& b, float (&accumulators)[kSets][kMTiles][4]) {
  const RowScales scales = lookup_row_scales(scale_bytes, scale_table);
  const std::uint32_t words[4] = {code_words.x, code_words.y, code_words.z, code_words.w};
#pragma unroll
  for (int block = 0; block < kBlocksPerChunk; ++block) {
    std::uint32_t fragment[4];
    decode_fragment(words[block], scales, fragment);
#pragma unroll
    for (int tile = 0; tile < kMTiles; ++tile) {
      const uint4& half = b.half[tile][block / 2];
      cuda::mma_bf16_m16n8k16(accumulators[block % kSets][tile], fragment, block % 2 == 0 ? half.x : half.z, block % 2 == 0 ? half.y : half.w);
    }
  }
}

// kTilesPerWarp weight tiles per warp (side by side in one record) share each activation load:
// half the L2 -> SM activation bytes per weight byte at 2 (sm80_nvfp4_mma_tuning.hpp).
// kBounded: the register-bounded form of the four-tile kernel (LaunchShape::register_bounded).
// kClusterK > 1: K is split over the kClusterK CTAs of a cluster too (LaunchShape::cluster_k), whose
// sums the cluster's first CTA adds through distributed shared memory and stores.
template <int kMTiles, int kWarpsN, int kWarpsK, int kTilesPerWarp, bool kBounded, int kClusterK>
__global__ void __launch_bounds__(32 * kWarpsN * kWarpsK,
                                  min_resident_warps(kMTiles, kWarpsN * kWarpsK, kTilesPerWarp, kBounded) / (kWarpsN * kWarpsK))
    decode_gemm_kernel(const DecodeGemmArgs args) {
  static_assert(!kBounded || kMTiles == kRegisterBoundedMTiles, "only the four-tile kernel has a register-bounded form");
  constexpr int kThreads = 32 * kWarpsN * kWarpsK;
  constexpr int kCtaRows = kTileRows * kTilesPerWarp * kWarpsN;
  constexpr int kCols = kMTiles * 8;
  // The same weight bytes in flight per warp whatever the tiles per warp, but at least two chunks
  // (the activation buffers alternate with the ring slots), so tile pairs of three and four
  // activation tiles hold twice the bytes of their single tiles.
  constexpr int kSameBytesDepth = weight_chunks_in_flight(kMTiles) / kTilesPerWarp;
  constexpr int kDepth = kSameBytesDepth < 2 ? 2 : kSameBytesDepth;
  constexpr bool kPrefetchActivations = prefetch_activations(kMTiles);
  static_assert(kThreads <= 1024 && kThreads >= 32, "CTA size");
  static_assert(kWarpsK * kCtaRows * (kCols + 1) * 4 + 1024 <= 48 * 1024, "partial sums must fit static shared memory");

  __shared__ std::uint32_t scale_table[256];  // E4M3 code -> BF16x2 pair (both lanes the scale)
  __shared__ float partial[kWarpsK][kCtaRows][kCols + 1];  // +1: no bank conflicts on the transpose

  // The next kernel may be scheduled at once (programmatic_launch.cuh): its CTAs take this grid's
  // slots as they free. Measured against letting it in at the drain: within 1% or faster on every
  // shape (4096x4096 M = 1 4.9 vs 5.5 us).
  allow_dependent_launch();
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int warp_n = warp % kWarpsN, warp_k = warp / kWarpsN;
  const int group = lane / 4, thread_in_group = lane % 4;
  // A cluster's CTAs (consecutive in x) share one row block and split its K between them.
  const int cta_n = int(blockIdx.x) / kClusterK;
  const int k_split = int(blockIdx.x % kClusterK) * kWarpsK + warp_k;
  constexpr int kSplits = kClusterK * kWarpsK;
  // The warp's first weight tile; its others follow it inside the same 128-row record (records
  // hold 8 tiles, zero-padded past N), so they never need a bounds check of their own.
  static_assert(kTilesPerBlock % kTilesPerWarp == 0, "a warp's tiles stay inside one record");
  const std::int64_t row_tile = (std::int64_t(cta_n) * kWarpsN + warp_n) * kTilesPerWarp;
  const std::int64_t row_tiles = (args.n + kTileRows - 1) / kTileRows;

  // Two accumulator sets for a single weight tile and few activation tiles: alternating blocks
  // between them lets consecutive MMAs overlap instead of each waiting for the previous one's
  // result. Two weight tiles give two independent chains already.
  constexpr int kSets = kMTiles <= 2 && kTilesPerWarp == 1 ? 2 : 1;
  float accumulators[kTilesPerWarp][kSets][kMTiles][4];
#pragma unroll
  for (int w = 0; w < kTilesPerWarp; ++w)
    for (int set = 0; set < kSets; ++set)
      for (int tile = 0; tile < kMTiles; ++tile)
        for (int i = 0; i < 4; ++i) accumulators[w][set][tile][i] = 0.0f;

  const bool has_rows = row_tile < row_tiles;
  const int chunk_begin = int(std::int64_t(args.chunks) * k_split / kSplits);
  const int chunk_end = int(std::int64_t(args.chunks) * (k_split + 1) / kSplits);
  // Chunks whose 64 columns all lie inside K run unpredicated; a last partial chunk (K % 64 != 0)
  // is done separately by the warp that owns it.
  const int full_chunks = args.k / kChunkK;
  const int fast_end = min(chunk_end, full_chunks);
  // The warp's tile in chunk 0; consecutive chunks are kRecordBytes apart (weight_layout.hpp).
  const std::uint8_t* records = static_cast<const std::uint8_t*>(args.records);
  const uint4* codes = reinterpret_cast<const uint4*>(records + code_offset(row_tile, 0, args.chunks, lane));
  const std::uint16_t* scales = reinterpret_cast<const std::uint16_t*>(records + scale_offset(row_tile, 0, args.chunks, lane));
  // Lane t reads chunk columns [16t, 16t+16) of its activation row: 2 uint4 per chunk.
  const uint4* activation_rows[kMTiles];
#pragma unroll
  for (int tile = 0; tile < kMTiles; ++tile) {
    const int row = min(tile * 8 + group, args.m - 1);
    activation_rows[tile] = reinterpret_cast<const uint4*>(static_cast<const std::uint16_t*>(args.activations) +
                                                           std::int64_t(row) * args.activation_stride) +
                            2 * thread_in_group;
  }

  // The weight ring: chunk c sits in slot (c - chunk_begin) % kDepth until it is computed; the
  // slot is refilled with chunk c + kDepth right after. Activations alternate between two
  // buffers, loaded one chunk ahead. All indices are compile-time constants, and the pointers
  // advance once per round so that every load uses a constant offset.
  const uint4* code_round = codes + std::int64_t(chunk_begin) * kCodeStride;
  const std::uint16_t* scale_round = scales + std::int64_t(chunk_begin) * kScaleStride;
  const uint4* activation_round[kMTiles];
#pragma unroll
  for (int tile = 0; tile < kMTiles; ++tile) activation_round[tile] = activation_rows[tile] + std::int64_t(chunk_begin) * 8;
  uint4 code_ring[kDepth][kTilesPerWarp];
  std::uint32_t scale_ring[kDepth][kTilesPerWarp];
  ActivationChunk<kMTiles> activation_buffers[2];
  const auto load_weights = [&](const int slot, const int offset_chunks) {
#pragma unroll
    for (int w = 0; w < kTilesPerWarp; ++w) {
      code_ring[slot][w] = load_stream_16(code_round + offset_chunks * kCodeStride + w * kTileCodeStride);
      scale_ring[slot][w] = load_stream_2(scale_round + offset_chunks * kScaleStride + w * kTileScaleStride);
    }
  };
#pragma unroll
  for (int slot = 0; slot < kDepth; ++slot) {
    if (has_rows && chunk_begin + slot < fast_end) load_weights(slot, slot);
  }
  // The first weights are in flight before anything else: the scale table is needed only from
  // the first decode on, and the weight loads depend on nothing the previous kernel writes
  // (activations and outputs do, programmatic_launch.cuh).
  fill_scale_table(scale_table, threadIdx.x, kThreads);
  __syncthreads();
  wait_for_prior_grids();
  if (has_rows) {
    if (kPrefetchActivations && chunk_begin < fast_end) load_activation_chunk(activation_round, 0, true, activation_buffers[0]);

    // One chunk in ring slot `slot` (kDepth is even, so slot parity is chunk parity within a round).
    const auto step = [&](const int slot, const bool refill, const bool prefetch_next) {
      uint4 code_words[kTilesPerWarp];
      std::uint32_t scale_bytes[kTilesPerWarp];
#pragma unroll
      for (int w = 0; w < kTilesPerWarp; ++w) code_words[w] = code_ring[slot][w], scale_bytes[w] = scale_ring[slot][w];
      if (refill) load_weights(slot, slot + kDepth);
      const auto compute_tiles = [&](const ActivationChunk<kMTiles>& activations) {
#pragma unroll
        for (int w = 0; w < kTilesPerWarp; ++w) compute_chunk(code_words[w], scale_bytes[w], scale_table, activations, accumulators[w]);
      };
      if (kPrefetchActivations) {
        if (prefetch_next) load_activation_chunk(activation_round, (slot + 1) * 8, true, activation_buffers[(slot + 1) % 2]);
        compute_tiles(activation_buffers[slot % 2]);
      } else {
        ActivationChunk<kMTiles> activations;
        load_activation_chunk(activation_round, slot * 8, true, activations);
        compute_tiles(activations);
      }
    };
    const auto next_round = [&] {
      code_round += kDepth * kCodeStride;
      scale_round += kDepth * kScaleStride;
#pragma unroll
      for (int tile = 0; tile < kMTiles; ++tile) activation_round[tile] += kDepth * 8;
    };
    static_assert(kDepth % 2 == 0, "activation buffers alternate with the ring slots");
    int base = chunk_begin;
    // Steady state: every slot is full and every refill and prefetch is inside the range; two
    // rounds per iteration where sm80_nvfp4_mma_tuning.hpp says, then one.
    if constexpr (two_rounds_per_iteration(kMTiles, kWarpsN * kWarpsK, kTilesPerWarp)) {
      for (; base + 3 * kDepth <= fast_end; base += 2 * kDepth) {
#pragma unroll
        for (int slot = 0; slot < kDepth; ++slot) step(slot, true, true);
        next_round();
#pragma unroll
        for (int slot = 0; slot < kDepth; ++slot) step(slot, true, true);
        next_round();
      }
    }
    for (; base + 2 * kDepth <= fast_end; base += kDepth) {
#pragma unroll
      for (int slot = 0; slot < kDepth; ++slot) step(slot, true, true);
      next_round();
    }
    // Drain: the last round(s), with bounds checks.
    for (; base < fast_end; base += kDepth) {
#pragma unroll
      for (int slot = 0; slot < kDepth; ++slot) {
        const int chunk = base + slot;
        if (chunk < fast_end) step(slot, chunk + kDepth < fast_end, chunk + 1 < fast_end);
      }
      next_round();
    }
    if (full_chunks >= chunk_begin && full_chunks < chunk_end) {
      // The partial chunk: lane t's block is inside K or not at all (K is a multiple of 16).
      const int chunk = full_chunks;
      const bool in_k = chunk * kChunkK + kChunkColumnOfLane * thread_in_group < args.k;
      ActivationChunk<kMTiles> activations;
      load_activation_chunk(activation_rows, chunk * 8, in_k, activations);
#pragma unroll
      for (int w = 0; w < kTilesPerWarp; ++w) {
        compute_chunk(load_stream_16(codes + std::int64_t(chunk) * kCodeStride + w * kTileCodeStride),
                      load_stream_2(scales + std::int64_t(chunk) * kScaleStride + w * kTileScaleStride), scale_table, activations,
                      accumulators[w]);
      }
    }
  }

  // Reduce the kWarpsK partial sums through shared memory. C fragment: c0,c1 are (row g, cols 2t,
  // 2t+1), c2,c3 are (row g+8, same cols); rows are weight rows, cols activation rows.
#pragma unroll
  for (int w = 0; w < kTilesPerWarp; ++w) {
#pragma unroll
    for (int tile = 0; tile < kMTiles; ++tile) {
#pragma unroll
      for (int set = 1; set < kSets; ++set)
        for (int i = 0; i < 4; ++i) accumulators[w][0][tile][i] += accumulators[w][set][tile][i];
      const int col = tile * 8 + 2 * thread_in_group;
      const int row = (warp_n * kTilesPerWarp + w) * kTileRows + group;
      partial[warp_k][row][col] = accumulators[w][0][tile][0];
      partial[warp_k][row][col + 1] = accumulators[w][0][tile][1];
      partial[warp_k][row + 8][col] = accumulators[w][0][tile][2];
      partial[warp_k][row + 8][col + 1] = accumulators[w][0][tile][3];
    }
  }
  __syncthreads();

  // Write: consecutive threads take consecutive weight rows, so stores along N coalesce.
  const float scale = args.alpha * kDecodeCompensation;
  constexpr int kOutputsPerThread = (kCtaRows * kCols + kThreads - 1) / kThreads;
  if constexpr (kClusterK > 1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
    __trap();  // clusters are SM 9.0 and newer: choose_launch_shape gives them only where PDL is on
#else
    // Each CTA sums its K-warps; after the cluster barrier the first CTA adds the others' sums
    // (distributed shared memory, in rank order: the result does not depend on timing) and stores.
    __shared__ float cta_sums[kCtaRows * kCols];  // the CTA's sums over its K-warps
    const int outputs = kCtaRows * min(args.m, kCols);  // output index: column index / kCtaRows, row index % kCtaRows
    for (int index = threadIdx.x; index < outputs; index += kThreads) {
      float sum = 0.0f;
#pragma unroll
      for (int split = 0; split < kWarpsK; ++split) sum += partial[split][index % kCtaRows][index / kCtaRows];
      cta_sums[index] = sum;
    }
    namespace cg = cooperative_groups;
    const cg::cluster_group cluster = cg::this_cluster();
    cluster.sync();  // every CTA's sums are in its shared memory
    if (cluster.block_rank() == 0) {
      for (int index = threadIdx.x; index < outputs; index += kThreads) {
        const std::int64_t n = std::int64_t(cta_n) * kCtaRows + index % kCtaRows;
        float sum = 0.0f;
#pragma unroll
        for (int rank = 0; rank < kClusterK; ++rank) sum += cluster.map_shared_rank(cta_sums, rank)[index];
        if (n < args.n) store_output(args.out, std::int64_t(index / kCtaRows) * args.out_stride + n, args.out_dtype, scale * sum);
      }
    }
    cluster.sync();  // keeps each CTA's shared memory alive until the first one has read it
#endif
  } else if constexpr (kMTiles == 1 || kOutputsPerThread <= 2) {
    // One activation tile (at most 4 outputs a thread, 1 to M stored) or at most two outputs a
    // thread: the batched form below took some of these kernels from 72 to 80 registers or into
    // spills, and 28672x8192 M = 1 needs 72 for its 7 CTAs per SM.
    for (int index = threadIdx.x; index < kCtaRows * kCols; index += kThreads) {
      const int col = index / kCtaRows, row = index % kCtaRows;
      const std::int64_t n = std::int64_t(cta_n) * kCtaRows + row;
      if (col >= args.m || n >= args.n) continue;
      float sum = 0.0f;
#pragma unroll
      for (int split = 0; split < kWarpsK; ++split) sum += partial[split][row][col];
      store_output(args.out, std::int64_t(col) * args.out_stride + n, args.out_dtype, scale * sum);
    }
  } else {
    // Each thread sums all its outputs' partials before storing any: the loads are then
    // independent of one another instead of a chain through every output. H200
    // 1-4% at M = 24-32, ~1% at M = 9-16, of the
    // 0.4-0.9 us a call the whole epilogue costs at M = 16 on 12288x4096 and 28672x8192. Output
    // `index` is column index / kCtaRows, row index % kCtaRows, so the first kCtaRows x M are the
    // ones to store.
    const int outputs = kCtaRows * min(args.m, kCols);
    float sums[kOutputsPerThread];
#pragma unroll
    for (int i = 0; i < kOutputsPerThread; ++i) {
      const int index = threadIdx.x + i * kThreads;
      sums[i] = 0.0f;
#pragma unroll
      for (int split = 0; split < kWarpsK; ++split)
        if (index < outputs) sums[i] += partial[split][index % kCtaRows][index / kCtaRows];
    }
#pragma unroll
    for (int i = 0; i < kOutputsPerThread; ++i) {
      const int index = threadIdx.x + i * kThreads;
      const std::int64_t n = std::int64_t(cta_n) * kCtaRows + index % kCtaRows;
      if (index < outputs && n < args.n)
        store_output(args.out, std::int64_t(index / kCtaRows) * args.out_stride + n, args.out_dtype, scale * sums[i]);
    }
  }
}

// CTAs of the kernel one SM holds at once (registers, shared memory, warps); 0 when CUDA cannot
// say. It depends only on the compiled kernel and the SM's limits, so it is asked once per
// instantiation (for one architecture of GPUs in the process).
template <int kMTiles, int kWarpsN, int kWarpsK, int kTilesPerWarp, bool kBounded, int kClusterK>
int resident_ctas_per_sm() {
  static const int resident = [] {
    int ctas = 0;
    const auto kernel = decode_gemm_kernel<kMTiles, kWarpsN, kWarpsK, kTilesPerWarp, kBounded, kClusterK>;
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&ctas, kernel, 32 * kWarpsN * kWarpsK, 0) != cudaSuccess) {
      (void)cudaGetLastError();  // not a launch error: the caller only loses PDL
      return 0;
    }
    return ctas;
  }();
  return resident;
}

// The LaunchShape of a kernel instantiation.
template <int kMTiles, int kWarpsN, int kWarpsK, int kTilesPerWarp, bool kBounded, int kClusterK>
constexpr LaunchShape kInstantiatedShape{kMTiles, kWarpsN, kWarpsK, kTilesPerWarp, kBounded, kClusterK};

template <int kMTiles, int kWarpsN, int kWarpsK, int kTilesPerWarp, bool kBounded, int kClusterK>
bool uses_programmatic_launch(std::int64_t n, ProgrammaticLaunch policy, int multiprocessors) {
  constexpr const LaunchShape& shape = kInstantiatedShape<kMTiles, kWarpsN, kWarpsK, kTilesPerWarp, kBounded, kClusterK>;
  if (policy != ProgrammaticLaunch::when_grid_fills) return policy == ProgrammaticLaunch::on;
  if (programmatic_at_any_fill(shape)) return true;
  return grid_fills_gpu(grid_ctas(shape, n),
                        resident_ctas_per_sm<kMTiles, kWarpsN, kWarpsK, kTilesPerWarp, kBounded, kClusterK>(), multiprocessors);
}

template <int kMTiles, int kWarpsN, int kWarpsK, int kTilesPerWarp, bool kBounded, int kClusterK>
cudaError_t launch(const DecodeGemmArgs& args, ProgrammaticLaunch policy, int multiprocessors, cudaStream_t stream) {
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(unsigned(grid_ctas(kInstantiatedShape<kMTiles, kWarpsN, kWarpsK, kTilesPerWarp, kBounded, kClusterK>, args.n)));
  config.blockDim = dim3(32 * kWarpsN * kWarpsK);
  config.stream = stream;
  const bool programmatic =
      uses_programmatic_launch<kMTiles, kWarpsN, kWarpsK, kTilesPerWarp, kBounded, kClusterK>(args.n, policy, multiprocessors);
  cudaLaunchAttribute attributes[2] = {programmatic_launch_attribute(programmatic), {}};
  attributes[1].id = cudaLaunchAttributeClusterDimension;
  attributes[1].val.clusterDim.x = kClusterK;  // the grid is a whole number of clusters (grid_ctas)
  attributes[1].val.clusterDim.y = 1;
  attributes[1].val.clusterDim.z = 1;
  config.attrs = attributes;
  config.numAttrs = kClusterK > 1 ? 2 : 1;
  return cudaLaunchKernelEx(&config, decode_gemm_kernel<kMTiles, kWarpsN, kWarpsK, kTilesPerWarp, kBounded, kClusterK>, args);
}

// The compiled shapes: sm80_nvfp4_mma_tuning.cpp's choices plus the alternatives the sweep compares
// (scripts/decode_shape_sweep.sh). NOTE: keep choose_launch_shape's results in this list
// (CudaNvfp4Tuning.EveryChosenShapeIsCompiled checks it).
// (m_tiles, warps_n, warps_k, tiles_per_warp, register_bounded, cluster_k); the four-tile shapes in
// both forms; tile pairs of three and four activation tiles in the shapes sm80_nvfp4_mma_tuning.cpp's
// one_wave_tile_pairs weighs; 1x8 CTAs with K split over clusters of 2-8 (one and two activation
// tiles: the rule's kClusteredWarpsK shapes and the sweep's alternatives).
#define FP4GEMM_DECODE_SHAPES(X) \
  X(1, 1, 8, 1, 0, 1) X(1, 1, 4, 1, 0, 1) X(1, 2, 2, 1, 0, 1) X(1, 2, 4, 1, 0, 1) X(1, 1, 12, 1, 0, 1) \
  X(2, 1, 8, 1, 0, 1) X(2, 1, 4, 1, 0, 1) X(2, 2, 2, 1, 0, 1) X(2, 2, 4, 1, 0, 1) \
  X(3, 1, 8, 1, 0, 1) X(3, 1, 4, 1, 0, 1) X(3, 2, 2, 1, 0, 1) X(3, 2, 4, 1, 0, 1) \
  X(4, 1, 8, 1, 0, 1) X(4, 1, 4, 1, 0, 1) X(4, 2, 2, 1, 0, 1) X(4, 2, 4, 1, 0, 1) \
  X(4, 1, 8, 1, 1, 1) X(4, 1, 4, 1, 1, 1) X(4, 2, 2, 1, 1, 1) X(4, 2, 4, 1, 1, 1) \
  X(8, 2, 4, 1, 0, 1) X(8, 4, 2, 1, 0, 1) \
  X(1, 1, 8, 2, 0, 1) X(1, 1, 4, 2, 0, 1) X(1, 2, 2, 2, 0, 1) \
  X(2, 1, 8, 2, 0, 1) X(2, 1, 4, 2, 0, 1) X(2, 2, 2, 2, 0, 1) X(2, 1, 5, 2, 0, 1) \
  X(1, 1, 16, 2, 0, 1) X(1, 1, 24, 2, 0, 1) X(2, 1, 16, 2, 0, 1) \
  X(3, 1, 8, 2, 0, 1) X(3, 1, 4, 2, 0, 1) X(3, 2, 2, 2, 0, 1) X(4, 1, 8, 2, 0, 1) X(4, 1, 4, 2, 0, 1) X(4, 2, 2, 2, 0, 1) \
  X(1, 1, 8, 1, 0, 2) X(1, 1, 8, 1, 0, 4) X(1, 1, 8, 1, 0, 8) X(2, 1, 8, 1, 0, 2) X(2, 1, 8, 1, 0, 4) X(2, 1, 8, 1, 0, 8)

// Calls `visit` with the template arguments of `shape` (one std::integral_constant each) when it is
// compiled in, and returns its result; returns `otherwise` for a shape that is not.
template <class Result, class Visit>
Result visit_compiled_shape(const LaunchShape& shape, Result otherwise, Visit visit) {
#define FP4GEMM_DECODE_VISIT(mt, wn, wk, tw, bounded, ck)                                               \
  if (shape.m_tiles == mt && shape.warps_n == wn && shape.warps_k == wk && shape.tiles_per_warp == tw &&       \
      shape.register_bounded == bool(bounded) && shape.cluster_k == ck)                                       \
    return visit(std::integral_constant<int, mt>{}, std::integral_constant<int, wn>{}, std::integral_constant<int, wk>{}, \
                 std::integral_constant<int, tw>{}, std::integral_constant<bool, bool(bounded)>{},                \
                 std::integral_constant<int, ck>{});
  FP4GEMM_DECODE_SHAPES(FP4GEMM_DECODE_VISIT)
#undef FP4GEMM_DECODE_VISIT
  return otherwise;
}

}  // namespace

cudaError_t launch_decode_gemm(const DecodeGemmArgs& args, const LaunchShape& shape, ProgrammaticLaunch policy,
                               int multiprocessors, cudaStream_t stream) {
  return visit_compiled_shape(shape, cudaErrorInvalidConfiguration, [&](auto mt, auto wn, auto wk, auto tw, auto bounded, auto ck) {
    return launch<decltype(mt)::value, decltype(wn)::value, decltype(wk)::value, decltype(tw)::value, decltype(bounded)::value,
                  decltype(ck)::value>(args, policy, multiprocessors, stream);
  });
}

bool decode_gemm_uses_programmatic_launch(const LaunchShape& shape, std::int64_t n, ProgrammaticLaunch policy,
                                          int multiprocessors) {
  return visit_compiled_shape(shape, false, [&](auto mt, auto wn, auto wk, auto tw, auto bounded, auto ck) {
    return uses_programmatic_launch<decltype(mt)::value, decltype(wn)::value, decltype(wk)::value, decltype(tw)::value,
                                    decltype(bounded)::value, decltype(ck)::value>(n, policy, multiprocessors);
  });
}

int decode_gemm_resident_ctas_per_sm(const LaunchShape& shape) {
  return visit_compiled_shape(shape, 0, [](auto mt, auto wn, auto wk, auto tw, auto bounded, auto ck) {
    return resident_ctas_per_sm<decltype(mt)::value, decltype(wn)::value, decltype(wk)::value, decltype(tw)::value,
                                decltype(bounded)::value, decltype(ck)::value>();
  });
}

bool is_compiled_shape(const LaunchShape& shape) {
  return visit_compiled_shape(shape, false, [](auto, auto, auto, auto, auto, auto) { return true; });
}

}  // namespace fp4gemm::cuda_nvfp4
