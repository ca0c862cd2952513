// NVFP4 x BF16 GEMM for M > 64 on Hopper ("prefill"): out = A * W^T with the activations as the
// wgmma's A operand (64 rows per warpgroup, from registers) and the decoded weight as its B operand
// (128 weight rows, from shared memory), so each decoded weight element serves 128 activation rows.
//
// Why this split, not the decode kernels' (weights as A from registers, activations as B): a
// decode kernel's wgmma is as wide as M (at most 64 columns), and at that width the decode's ALU
// work adds to the tensor pipe's time instead of hiding under it; at 128-256 columns it hides
//. Writing BF16 weights to shared
// memory costs 2 B written and 2 B read per element; at M = 64 that alone is the SM's whole
// shared-memory bandwidth at the pipe's rate, but here each element is
// read by two warpgroups of 64 rows (256 FLOPs per element), which leaves room.
// Measured on the H200: correct, but each CTA runs
// its wgmmas at 40-60% of the pipe, 0.36-0.94x of cuBLAS BF16 (best on the largest weights at
// M = 65-128). No single stage binds: without the decode, without the fence's wait for the
// fragment loads, or with neither, the pipe stays at 40-60%; the chunk's
// chain of hand-offs between the warps is what is left. `auto` does not pick this kernel.
//
// A CTA is 128 activation rows x 128 weight rows (one weight record per chunk, weight_layout.hpp):
// - kPrefillDecodeWarps decode warps, each taking whole chunks in turn: a warp's lane 0
//   bulk-copies its chunks' records (codes and scales, 4.5 KiB) into its own stages of a ring, two
//   rounds ahead; they decode them with the decode kernels' decode (decode_tile_at) and write the
//   BF16 fragments to a ring of decoded stages with stmatrix, in wgmma's no-swizzle K-major
//   core-matrix layout (the packed activations' layout, activation_pack_layout.hpp);
// - two consumer warpgroups load their 64 activation rows' chunk from global memory into A
//   fragments, from a copy packed per call in fragment order (sm90_nvfp4_prefill_pack.hpp), up
//   to three chunks ahead, and issue four wgmma.m64n128k16 per chunk.
// Full/empty mbarriers order the decoded ring, full ones the record ring (a warp reuses only its
// own record stages). The weights depend on no earlier kernel, so the decode warps start before
// the grid-dependency wait; the consumers wait before their first load. Each consumer warp stages
// its output tile in the record ring, idle by then, and writes it out in 16-byte pieces.
// Where the tiles leave SMs idle, a tile's chunks are split over up to kPrefillMaxKSplits CTAs
// (prefill_k_splits, blockIdx.z); its last CTA adds their FP32 partials (sum_split_partials).
#include "backends/cuda_common/dynamic_shared_limit.hpp"
#include "backends/cuda_common/programmatic_launch.cuh"
#include "backends/cuda_nvfp4/activation_pack_layout.hpp"
#include "backends/cuda_nvfp4/weight_decode.cuh"
#include "backends/cuda_nvfp4/mma_small_m/sm80_nvfp4_mma_tuning.hpp"
#include "backends/cuda_nvfp4/wgmma_prefill/sm90_nvfp4_prefill_pack.hpp"
#include "backends/cuda_nvfp4/sm90_async_ops.cuh"
#include "backends/cuda_nvfp4/wgmma_prefill/sm90_nvfp4_prefill_gemm.cuh"
#include "backends/cuda_nvfp4/sm90_wgmma_chunk.cuh"
#include "backends/cuda_common/launch_registers.hpp"

namespace fp4gemm::cuda_nvfp4 {
namespace {

constexpr int kConsumerWarpgroups = kPrefillCtaTokens / 64;
constexpr int kFirstDecodeWarp = 4 * kConsumerWarpgroups;
constexpr int kConsumerThreads = 128 * kConsumerWarpgroups;  // warps 0 .. kFirstDecodeWarp - 1
// Registers: 16 warps get 128 each at launch. The decode warpgroups then give kDecodeWarpRegisters
// back and the consumers take what they freed (setmaxnreg) for four fragment buffers. What the
// decode warpgroups free must cover what the consumers take, or the consumers' setmaxnreg waits
// forever (it hung so once). Each decode warp's
// lane 0 copies its own records, so no warp of its own is needed for the copies.
constexpr int kPrefillThreads = 32 * (kFirstDecodeWarp + kPrefillDecodeWarps);
constexpr int kLaunchRegisters = 65536 / kPrefillThreads;
constexpr int kDecodeWarpRegisters = 88;
constexpr int kConsumerWarpRegisters = 168;
static_assert(kPrefillDecodeWarps % 4 == 0, "the decode warps are whole warpgroups (setmaxnreg is per warpgroup)");
static_assert(kConsumerWarpgroups * (kConsumerWarpRegisters - kLaunchRegisters) <=
                  kPrefillDecodeWarps / 4 * (kLaunchRegisters - kDecodeWarpRegisters),
              "the consumers take no more registers than the decode warpgroups give back");

// Dynamic shared memory: the record ring, the decoded ring, the scale table, the mbarriers (full
// barriers of the record ring; full and empty ones of the decoded ring).
struct PrefillSharedLayout {
  static constexpr int kCtaTiles = kTilesPerBlock;  // one record
  static_assert(kTileRows * kCtaTiles == kPrefillCtaRows, "a CTA's weight rows are one record's");
  static constexpr int kRecordStageBytes = kRecordBytes;
  // A decoded stage: [4 MMA blocks][16 row groups][2 k-halves][8 rows][8 k-slots] BF16.
  static constexpr int kDecodedBlockBytes = kPrefillCtaRows * 16 * 2;
  static constexpr int kDecodedStageBytes = kBlocksPerChunk * kDecodedBlockBytes;
  static constexpr int kDecodedOffset = kPrefillRecordStages * kRecordStageBytes;
  static constexpr int kTableOffset = kDecodedOffset + kPrefillDecodedStages * kDecodedStageBytes;
  static constexpr int kBarrierOffset = kTableOffset + 256 * 4;
  static constexpr int kBytes = kBarrierOffset + (kPrefillRecordStages + 2 * kPrefillDecodedStages) * 8;
  static_assert(kRecordStageBytes % 128 == 0 && kDecodedOffset % 128 == 0, "stages stay 128-byte aligned");
  static_assert(2 * kCoreMatrixKStep == kCoreMatrixNStep, "a row group is its two k-halves of 8 rows x 16 bytes");
  static_assert(kPrefillDecodedStages >= kPrefillDecodeWarps && kPrefillRecordStages % kPrefillDecodeWarps == 0 &&
                    kPrefillRecordStages >= 2 * kPrefillDecodeWarps,
                "each decode warp's chunk of a round has its own decoded stage, and its own record stages, two or more");
};

#if FP4GEMM_SM90A_DEVICE
// A thread's place in a ring: the stage of its next chunk and that round's barrier parity.
struct RingPosition {
  int stage = 0;
  unsigned phase = 0;
  __device__ __forceinline__ void advance(int stages) {
    if (++stage == stages) stage = 0, phase ^= 1;
  }
};

// One chunk's A fragments of a lane from the packed activations (sm90_nvfp4_prefill_pack.hpp):
// four 16-byte loads straight into the fragment registers, with no moves after them (a move
// waits for its load at once).
__device__ __forceinline__ void load_activation_chunk(const uint4* lane_chunks, int chunk, std::uint32_t (&a)[kBlocksPerChunk][4]) {
  const uint4* const at = lane_chunks + std::int64_t(chunk) * (kPrefillGroupChunkBytes / 16);
#pragma unroll
  for (int block = 0; block < kBlocksPerChunk; ++block) {
    const uint4 value = __ldg(at + 32 * block);
    a[block][0] = value.x, a[block][1] = value.y, a[block][2] = value.z, a[block][3] = value.w;
  }
}

// The output tile of one consumer warp: its 16 activation rows x the CTA's 128 weight rows, staged
// in shared memory and written out in 16-byte pieces. (Each lane storing its accumulators to global
// memory element by element wrote 8-16 scattered bytes per row and instruction: with the drain at
// exit, ~15% of the warp samples at 4096^2 M = 512.)
// Rows are padded by 16 bytes so that the lanes' pair stores (rows g, columns 2t) hit 32 banks.
template <class T>
struct StagedOutputTile {
  static constexpr int kRows = 16;
  static constexpr int kRowBytes = kPrefillCtaRows * int(sizeof(T));
  static constexpr int kPitch = kRowBytes + 16;
  static constexpr int kBytes = kRows * kPitch;
  static constexpr int kElementsPerPiece = 16 / int(sizeof(T));
  static constexpr int kPiecesPerRow = kRowBytes / 16;
};

// Stores a consumer lane's accumulators times `scale` through warp `warp`'s staging tile, the
// warp-th of the tiles from shared address `staging`: d[4j + 2h + e] is the warp's row g + 8h (g = lane / 4), the CTA's weight row
// 8j + 2t + e (t = lane % 4), the wgmma D layout. first_token is the warp's first row, first_row
// the CTA's first weight row.
template <class T>
__device__ __forceinline__ void store_prefill_accumulators(const KernelProblem& args, const float (&d)[64], std::uint32_t staging,
                                                           int warp, std::int64_t first_token, std::int64_t first_row, float scale,
                                                           int lane) {
  using Tile = StagedOutputTile<T>;
  const std::uint32_t tile = staging + std::uint32_t(warp * Tile::kBytes);
  const int g = lane / 4, t = lane % 4;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
#pragma unroll
    for (int j = 0; j < 16; ++j) {
      const std::uint32_t at = tile + (g + 8 * h) * Tile::kPitch + (8 * j + 2 * t) * int(sizeof(T));
      if constexpr (std::is_same_v<T, float>) {
        asm volatile("st.shared.v2.f32 [%0], {%1, %2};" ::"r"(at), "f"(scale * d[4 * j + 2 * h]), "f"(scale * d[4 * j + 2 * h + 1]));
      } else {
        const T low = output_value<T>(scale * d[4 * j + 2 * h]), high = output_value<T>(scale * d[4 * j + 2 * h + 1]);
        const std::uint32_t pair = std::uint32_t(__builtin_bit_cast(std::uint16_t, low)) |
                                   (std::uint32_t(__builtin_bit_cast(std::uint16_t, high)) << 16);
        asm volatile("st.shared.b32 [%0], %1;" ::"r"(at), "r"(pair));
      }
    }
  }
  __syncwarp();  // the warp reads back rows other lanes wrote
  T* const out = static_cast<T*>(args.out);
  // 16-byte stores need the output and its row stride 16-byte aligned; otherwise element by element.
  const bool vectors = (reinterpret_cast<std::uintptr_t>(out) % 16 == 0) && (args.out_stride * std::int64_t(sizeof(T))) % 16 == 0;
#pragma unroll 4
  for (int piece = lane; piece < Tile::kRows * Tile::kPiecesPerRow; piece += 32) {
    const int row = piece / Tile::kPiecesPerRow, column = piece % Tile::kPiecesPerRow * Tile::kElementsPerPiece;
    const std::int64_t token = first_token + row, n = first_row + column;
    if (token >= args.m || n >= args.n) continue;
    uint4 value;
    asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(value.x), "=r"(value.y), "=r"(value.z), "=r"(value.w)
                 : "r"(tile + row * Tile::kPitch + column * int(sizeof(T))));
    T* const at = out + token * args.out_stride + n;
    if (vectors && n + Tile::kElementsPerPiece <= args.n) {
      *reinterpret_cast<uint4*>(at) = value;
    } else {
      T elements[Tile::kElementsPerPiece];
      __builtin_memcpy(elements, &value, 16);
      for (int e = 0; e < Tile::kElementsPerPiece && n + e < args.n; ++e) at[e] = elements[e];
    }
  }
}

// The K split's hand-off (prefill_k_splits), by the consumer threads of a CTA: each writes its
// partial sums to the tile's slot of this split, then the CTA counts itself in; the tile's last
// CTA reads every split's slot back and leaves their sum in `d`, added in split order so that the
// result does not depend on which CTA came last. Returns whether this CTA is that last one. (The
// classic fence, barrier, counter and fence order: a partial is visible at the GPU scope before
// its CTA counts, and read after the count says all are.) Slot layout: [16 quads][consumer threads]
// float4, so each thread's stores and loads are coalesced with its neighbours'.
__device__ __forceinline__ bool sum_split_partials(const PrefillGemmArgs& args, float (&d)[64], int split) {
  constexpr int kSlotQuads = 16 * kConsumerThreads;
  constexpr unsigned kSplitBarrier = 1;  // a named barrier of the consumer threads (0 is __syncthreads')
  __shared__ unsigned last_of_tile;
  const std::int64_t tile = std::int64_t(blockIdx.y) * gridDim.x + blockIdx.x;
  float4* const slots = static_cast<float4*>(args.partials) + tile * args.k_splits * kSlotQuads + threadIdx.x;
#pragma unroll
  for (int quad = 0; quad < 16; ++quad) {
    __stcg(slots + split * kSlotQuads + quad * kConsumerThreads, make_float4(d[4 * quad], d[4 * quad + 1], d[4 * quad + 2], d[4 * quad + 3]));
  }
  __threadfence();
  named_barrier_sync(kSplitBarrier, kConsumerThreads);
  if (threadIdx.x == 0) last_of_tile = atomicAdd(args.tile_counters + tile, 1u) == unsigned(args.k_splits - 1);
  named_barrier_sync(kSplitBarrier, kConsumerThreads);
  if (!last_of_tile) return false;
  __threadfence();
  // A split's 16 loads are issued together and summed after, so each split costs one L2 round
  // trip. (Summing quad by quad with the splits in the inner loop chained every load after the
  // previous one's addition: 4096^2 at M = 65 split 4 ways ran 21.9 us, 18.8 after this change,
  //.) This CTA's own partial is read back too,
  // so that `d` can take the sum in split order.
#pragma unroll
  for (int i = 0; i < 64; ++i) d[i] = 0.0f;
  for (int other = 0; other < args.k_splits; ++other) {
    float4 part[16];
#pragma unroll
    for (int quad = 0; quad < 16; ++quad) part[quad] = __ldcg(slots + other * kSlotQuads + quad * kConsumerThreads);
#pragma unroll
    for (int quad = 0; quad < 16; ++quad) {
      d[4 * quad] += part[quad].x, d[4 * quad + 1] += part[quad].y, d[4 * quad + 2] += part[quad].z, d[4 * quad + 3] += part[quad].w;
    }
  }
  return true;
}
#endif

__global__ void __launch_bounds__(kPrefillThreads, 1) prefill_gemm_kernel(const PrefillGemmArgs args) {
#if FP4GEMM_SM90A_DEVICE
  using Layout = PrefillSharedLayout;
  constexpr int kRecordStages = kPrefillRecordStages, kDecodedStages = kPrefillDecodedStages;

  extern __shared__ __align__(128) std::uint8_t shared[];
  std::uint32_t* scale_table = reinterpret_cast<std::uint32_t*>(shared + Layout::kTableOffset);
  std::uint64_t* record_full = reinterpret_cast<std::uint64_t*>(shared + Layout::kBarrierOffset);
  std::uint64_t* decoded_full = record_full + kRecordStages;
  std::uint64_t* decoded_empty = decoded_full + kDecodedStages;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const std::int64_t row_block = blockIdx.y;  // the CTA's record column: weight rows 128 * row_block ...
  // The CTA's chunks: split blockIdx.z of args.k_splits (prefill_k_splits); every loop below
  // counts them from 0, the records and packed activations start at chunk `first_chunk`.
  const int split = int(blockIdx.z);
  const int first_chunk = int(std::int64_t(args.chunks) * split / args.k_splits);
  const int chunks = int(std::int64_t(args.chunks) * (split + 1) / args.k_splits) - first_chunk;

  if (threadIdx.x == 0) {
    for (int stage = 0; stage < kRecordStages; ++stage) {
      mbarrier_init(&record_full[stage], 1);  // the copying lane's expect-bytes arrival
    }
    for (int stage = 0; stage < kDecodedStages; ++stage) {
      mbarrier_init(&decoded_full[stage], 32);
      mbarrier_init(&decoded_empty[stage], kConsumerThreads);
    }
    fence_barrier_init();
  }
  fill_scale_table(scale_table, threadIdx.x, kPrefillThreads);
  __syncthreads();  // barriers and the scale table are ready before any copy, decode or arrival

  const std::uint32_t base = shared_address(shared);
  const auto barrier_at = [](const std::uint64_t* ring, int stage) { return shared_address(ring + stage); };

  if (warp >= kFirstDecodeWarp) {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(kDecodeWarpRegisters));
    // Decode warp w decodes chunks w, w + kPrefillDecodeWarps, ...: all of a chunk's tiles, from
    // the record ring into A-layout fragments and on into the decoded ring, then one proxy fence
    // and one arrival for the chunk. (Every warp on every chunk made each chunk wait for the
    // slowest warp's decode -> store -> fence chain: ~0.7 us a chunk.) Fragment register i is stmatrix's matrix i: rows 0-7 / 8-15 of the
    // tile (the next row group) for i = 0 / 1 and k-slots 0-7 / 8-15 (the next k-half) for
    // i = 0-1 / 2-3; lanes 8i .. 8i + 7 address matrix i's rows. A 16-row tile of weight rows is,
    // in the decoded block, two row groups of wgmma's B (N rows).
    const int decode_warp = warp - kFirstDecodeWarp;
    const std::uint32_t table_address = shared_address(scale_table);
    const std::uint32_t lane_row_offset = ((lane >> 3) & 1) * kCoreMatrixNStep + (lane >> 4) * kCoreMatrixKStep + (lane & 7) * 16;
    // Each decode warp's lane 0 copies its own warp's records: stage chunk % kRecordStages is the
    // warp's, and once the warp has decoded a chunk its stage takes the warp's chunk kRecordStages
    // later, so every warp's copies run kRecordStages / kPrefillDecodeWarps rounds ahead. (Lane 0
    // of one warp copying for all made the later warps' records arrive about a chunk before they
    // were needed; this is 1-4% faster.)
    const std::uint8_t* const records = static_cast<const std::uint8_t*>(args.records) +
                                        record_offset(row_block * kTilesPerBlock, 0, args.chunks) + std::int64_t(first_chunk) * kRecordBytes;
    const auto copy_record = [&](int chunk) {
      const int stage = chunk % kRecordStages;
      const std::uint32_t full = barrier_at(record_full, stage);
      mbarrier_arrive_expect_bytes(full, kRecordBytes);
      bulk_copy_to_shared(base + stage * Layout::kRecordStageBytes, records + std::int64_t(chunk) * kRecordBytes, kRecordBytes, full);
    };
    if (lane == 0) {
      for (int chunk = decode_warp; chunk < chunks && chunk < kRecordStages; chunk += kPrefillDecodeWarps) copy_record(chunk);
    }
    for (int chunk = decode_warp; chunk < chunks; chunk += kPrefillDecodeWarps) {
      const int record_stage = chunk % kRecordStages, decoded_stage = chunk % kDecodedStages;
      mbarrier_wait(barrier_at(record_full, record_stage), (chunk / kRecordStages) & 1);
      mbarrier_wait(barrier_at(decoded_empty, decoded_stage), ((chunk / kDecodedStages) & 1) ^ 1);
      const std::uint32_t record = base + record_stage * Layout::kRecordStageBytes;
      const std::uint32_t decoded = base + Layout::kDecodedOffset + decoded_stage * Layout::kDecodedStageBytes;
#pragma unroll 2
      for (int tile = 0; tile < Layout::kCtaTiles; ++tile) {
        std::uint32_t fragments[kBlocksPerChunk][4];
        decode_tile_at(record + tile * kTileCodeBytes + lane * 16, record + kRecordCodeBytes + tile * kTileScaleBytes + lane * 2,
                       table_address, fragments);
#pragma unroll
        for (int block = 0; block < kBlocksPerChunk; ++block) {
          store_matrix_x4(decoded + block * Layout::kDecodedBlockBytes + tile * 2 * kCoreMatrixNStep + lane_row_offset, fragments[block]);
        }
      }
      fence_proxy_async_shared();  // stmatrix writes through the generic proxy; wgmma reads through the async one
      __syncwarp();  // every lane has read the record before its stage takes the next copy
      if (lane == 0 && chunk + kRecordStages < chunks) copy_record(chunk + kRecordStages);
      mbarrier_arrive(barrier_at(decoded_full, decoded_stage));
    }
    return;
  }

  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(kConsumerWarpRegisters));
  // The consumer warpgroups: warp w (of 8) holds activation rows 16w + g and 16w + g + 8 of the
  // CTA's 128 (g = lane / 4) in its A fragments; its warpgroup's wgmmas cover 64 rows x 128 weight rows.
  const std::int64_t group = std::int64_t(blockIdx.x) * (kPrefillCtaTokens / kPrefillGroupRows) + warp;
  const uint4* const lane_chunks = static_cast<const uint4*>(args.packed_activations) +
                                   (group * args.chunks + first_chunk) * (kPrefillGroupChunkBytes / 16) + lane;

  float d[64];
#pragma unroll
  for (int i = 0; i < 64; ++i) d[i] = 0.0f;
  // Four fragment buffers in turn: the chunk the wgmmas read and the next three, loaded up to three
  // chunks ahead. Every wgmma fence still waits for all the fragment loads in flight (ptxas puts
  // them on one scoreboard), so this does not hide their latency as the depth suggests; measured,
  // it is 0-22% faster than two buffers, most where a CTA runs many waves of chunks.
  std::uint32_t a0[kBlocksPerChunk][4], a1[kBlocksPerChunk][4], a2[kBlocksPerChunk][4], a3[kBlocksPerChunk][4];
  wait_for_prior_grids();  // the activations are the previous kernel's output
  load_activation_chunk(lane_chunks, 0, a0);
  if (chunks > 1) load_activation_chunk(lane_chunks, 1, a1);
  if (chunks > 2) load_activation_chunk(lane_chunks, 2, a2);

  RingPosition decoded, previous;
  // Chunk `chunk` from fragments `current`; once the previous chunk's wgmmas have retired, its
  // decoded stage is released and its fragments `spare` take chunk + 3.
  const auto step = [&](int chunk, std::uint32_t (&current)[kBlocksPerChunk][4], std::uint32_t (&spare)[kBlocksPerChunk][4]) {
    mbarrier_wait(barrier_at(decoded_full, decoded.stage), decoded.phase);
    const std::uint32_t weights = base + Layout::kDecodedOffset + decoded.stage * Layout::kDecodedStageBytes;
    wgmma_fence();
#pragma unroll
    for (int block = 0; block < kBlocksPerChunk; ++block) {
      wgmma_m64n128k16<kDescriptorHigh<kCoreMatrixNStep>>(
          d, current[block], shared_matrix_descriptor_low<kCoreMatrixKStep>(weights + block * Layout::kDecodedBlockBytes));
    }
    wgmma_commit();
    wgmma_wait<1>();  // the previous chunk's wgmmas have read their stage and fragments
#pragma unroll
    for (int i = 0; i < 64; ++i) pin_register(d[i]);
    if (chunk > 0) mbarrier_arrive(barrier_at(decoded_empty, previous.stage));
    previous = decoded;
    decoded.advance(kDecodedStages);
    if (chunk + 3 < chunks) load_activation_chunk(lane_chunks, chunk + 3, spare);
  };
  int chunk = 0;
  for (; chunk + 4 <= chunks; chunk += 4) {
    step(chunk, a0, a3);
    step(chunk + 1, a1, a0);
    step(chunk + 2, a2, a1);
    step(chunk + 3, a3, a2);
  }
  if (chunk < chunks) step(chunk, a0, a3);
  if (chunk + 1 < chunks) step(chunk + 1, a1, a0);
  if (chunk + 2 < chunks) step(chunk + 2, a2, a1);
  wgmma_wait<0>();
#pragma unroll
  for (int i = 0; i < 64; ++i) pin_register(d[i]);
  allow_dependent_launch();  // only the epilogue is left
  if (args.k_splits > 1 && !sum_split_partials(args, d, split)) return;  // another CTA of the tile finishes it

  const float scale = args.alpha * kDecodeCompensation;
  const std::int64_t first_row = row_block * kPrefillCtaRows;
  const std::int64_t first_token = std::int64_t(blockIdx.x) * kPrefillCtaTokens + 16 * warp;
  // The warp's staging tile is in the record ring, idle now: every record was decoded before the
  // last decoded stage this warp waited for, and no copy is in flight.
  static_assert(kFirstDecodeWarp * StagedOutputTile<float>::kBytes <= kRecordStages * Layout::kRecordStageBytes,
                "the consumer warps' staging tiles fit in the record ring");
  switch (args.out_dtype) {
    case DType::f32: store_prefill_accumulators<float>(args, d, base, warp, first_token, first_row, scale, lane); break;
    case DType::bf16: store_prefill_accumulators<__nv_bfloat16>(args, d, base, warp, first_token, first_row, scale, lane); break;
    case DType::f16: store_prefill_accumulators<__half>(args, d, base, warp, first_token, first_row, scale, lane); break;
  }
#endif
}

}  // namespace

cudaError_t launch_prefill_gemm(const PrefillGemmArgs& args, bool programmatic, cudaStream_t stream) {
  if (const cudaError_t raised =
          fp4gemm::cuda::raise_dynamic_shared_limit(reinterpret_cast<const void*>(prefill_gemm_kernel), PrefillSharedLayout::kBytes);
      raised != cudaSuccess) {
    return raised;
  }
  static const cudaError_t registers_checked = fp4gemm::cuda::expect_launch_registers(prefill_gemm_kernel, kLaunchRegisters);
  if (registers_checked != cudaSuccess) return registers_checked;
  if (args.k_splits < 1 || args.k_splits > args.chunks ||
      (args.k_splits > 1 && (args.tile_counters == nullptr || args.partials == nullptr))) {
    return cudaErrorInvalidValue;
  }
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(unsigned((args.m + kPrefillCtaTokens - 1) / kPrefillCtaTokens),
                        unsigned((args.n + kPrefillCtaRows - 1) / kPrefillCtaRows), unsigned(args.k_splits));
  config.blockDim = dim3(kPrefillThreads);
  config.dynamicSmemBytes = PrefillSharedLayout::kBytes;
  config.stream = stream;
  cudaLaunchAttribute attribute = programmatic_launch_attribute(programmatic);
  config.attrs = &attribute;
  config.numAttrs = 1;
  return cudaLaunchKernelEx(&config, prefill_gemm_kernel, args);
}

}  // namespace fp4gemm::cuda_nvfp4
