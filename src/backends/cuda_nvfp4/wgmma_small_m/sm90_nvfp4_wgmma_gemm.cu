// NVFP4 x BF16 GEMM for small M on Hopper (cuda_nvfp4 picks it from M = 17 for tall weights, from
// M = 25 where its grid fills the SMs and from M = 33 for large weights, choose_decode_kernel): the
// weight decode of the mma.sync kernel (sm80_nvfp4_mma_gemm.cu, weight_layout.hpp), multiplied with
// warpgroup MMAs so that one copy of the activations in shared memory serves a whole CTA instead of
// each warp loading its own.
//
// A CTA is `kWarpgroups` consumer warpgroups and two producer warps.
// - The producers fill a ring of kWgmmaStages shared-memory stages with 1-D bulk copies: per
//   chunk, one lane copies the CTA's codes and scales (contiguous inside the chunk's weight
//   record), another the packed activations (activation_pack_layout.hpp). Full/empty mbarriers
//   order them against the consumers.
// - Each consumer warp decodes its 16-row tile of the chunk from the stage into four 16x16 A
//   fragments; its warpgroup (64 rows) then runs four wgmma.m64nTk16 with A from registers and B
//   (T = kTokens activation rows) from the stage. While they run it decodes the next chunk; it
//   releases a stage once the wgmmas that read it have retired.
//   Why A from registers and the decode on the MMA warps: decode warps that wrote BF16 weights to
//   shared memory for wgmmas with both operands there (warp-specialized) ran 1.3-4x slower on every
//   shape at M = 32 and 64 (H200, 28672x8192 M = 64 98 against 72 us): at M = 64 writing and
//   reading the BF16 weights alone takes the SM's whole shared-memory bandwidth at the tensor pipe's
//   rate.
// - A cluster is `multicast` x `splits` CTAs. The `multicast` CTAs of a row (neighbouring row
//   blocks, the same K range) share each activation chunk: each copies a slice of it into all of
//   them (bulk copy with multicast), and a stage is reused only when every CTA of the group has
//   released it. (Measured slower; the default shape rule uses groups of one.)
// - K is split over the `splits` CTAs of a column; after the main loop each CTA leaves its FP32
//   partial sums in shared memory and sums every splits-th accumulator quad of the column's
//   partials (distributed shared memory) in rank order: deterministic, no workspace and no second
//   kernel. Without a K split a CTA stores straight from its accumulators.
// - The stream-K grid (kStreamed; sm90_nvfp4_wgmma_stream_k.hpp) is stream_k_ctas_per_sm CTAs per SM
//   instead, each walking an equal share of the (row block, chunk) pairs as segments, one per row
//   block; a row block split between CTAs is summed by the CTA of its last chunk from the others'
//   slots in a global workspace (finish_stream_k_segment).
#include <cooperative_groups.h>

#include "backends/cuda_common/dynamic_shared_limit.hpp"
#include "backends/cuda_nvfp4/wgmma_small_m/sm90_nvfp4_wgmma_pack.hpp"
#include "backends/cuda_nvfp4/weight_decode.cuh"
#include "backends/cuda_common/programmatic_launch.cuh"
#include "backends/cuda_nvfp4/sm90_async_ops.cuh"
#include "backends/cuda_nvfp4/sm90_wgmma_chunk.cuh"
#include "backends/cuda_nvfp4/wgmma_small_m/sm90_nvfp4_wgmma_gemm.cuh"

namespace fp4gemm::cuda_nvfp4 {
namespace {

// Threads of a CTA: its consumer warpgroups and the two producer warps.
constexpr int wgmma_cta_threads(int warpgroups) { return 128 * warpgroups + 64; }

// Dynamic shared memory of one CTA: the stage ring (each stage: the CTA's weight codes and scales
// of one chunk, then the chunk's packed activations), the scale table and the mbarriers. After
// the main loop a K split's partial sums reuse the stages.
template <int kTokens, int kWarpgroups>
struct WgmmaSharedLayout {
  static constexpr int kCtaTiles = 4 * kWarpgroups;
  static constexpr int kCtaRows = kTileRows * kCtaTiles;
  static constexpr int kCodeBytes = kCtaTiles * kTileCodeBytes;
  static constexpr int kScaleBytes = kCtaTiles * kTileScaleBytes;
  static constexpr int kActivationOffset = kCodeBytes + kScaleBytes;
  static constexpr int kActivationBytes = int(packed_chunk_bytes(kTokens));
  static constexpr int kBlockBytes = int(packed_block_bytes(kTokens));  // one MMA block's B operand
  static constexpr int kStageBytes = kActivationOffset + kActivationBytes;
  static constexpr int kPartialBytes = kCtaRows * kTokens * 4;  // a K split's partial sums (quad-major)
  static constexpr int kTableOffset = kWgmmaStages * kStageBytes;
  static constexpr int kBarrierOffset = kTableOffset + 256 * 4;
  static constexpr int kBytes = kBarrierOffset + 2 * kWgmmaStages * 8;
  static_assert(kPartialBytes <= kTableOffset, "the partial sums fit in the stages they reuse");
  static_assert(kPartialBytes == stream_k_slot_bytes(WgmmaShape{kTokens, kWarpgroups, 1}), "a stream-K slot holds a CTA's sums");
  static_assert(kActivationOffset % 128 == 0 && kStageBytes % 128 == 0, "stages and operands stay 128-byte aligned");
  static_assert(kBlockBytes * kBlocksPerChunk == kActivationBytes, "a chunk is four MMA blocks");
  static_assert(kWarpgroups == 1 || kWarpgroups == 2, "a CTA covers half a weight record or all of it");
};

#if FP4GEMM_SM90A_DEVICE
// The end of one segment of the stream-K grid (sm90_nvfp4_wgmma_stream_k.hpp), for the consumer threads
// (the first kConsumerThreads of the CTA; `rows` weight rows per row block). A contributor leaves
// its sums in its workspace slot, quad-major (consecutive threads 16 bytes apart), and returns true:
// its flag is raised later (raise_stream_k_flag). The finisher adds the contributors' slots to its
// own sums in CTA order, and it (or the CTA that walked the whole row block) stores the block.
inline constexpr int kStreamKBarrier = 1;  // a named barrier of the consumer threads alone

template <int kTokens, int kConsumerThreads>
__device__ __forceinline__ bool finish_stream_k_segment(const WgmmaGemmArgs& args, const StreamKSegment& segment,
                                                        float (&sums)[kTokens / 2], int rows) {
  constexpr int kQuads = kTokens / 8;
  float4* const lane_partials = static_cast<float4*>(args.stream_partials) + threadIdx.x;
  const auto slot = [&](int cta) { return lane_partials + std::int64_t(cta) * kQuads * kConsumerThreads; };
  const int cta = int(blockIdx.x);
  if (segment.contributes(args.chunks)) {
    float4* const mine = slot(cta);
#pragma unroll
    for (int quad = 0; quad < kQuads; ++quad) {
      mine[quad * kConsumerThreads] = make_float4(sums[4 * quad], sums[4 * quad + 1], sums[4 * quad + 2], sums[4 * quad + 3]);
    }
    // NOTE: the barrier orders every consumer thread's slot writes before thread 0's release of the
    // flag (a release is cumulative), so no thread fences its own writes.
    named_barrier_sync(kStreamKBarrier, kConsumerThreads);
    return true;
  }
  if (segment.first_cta < cta) {
    // NOTE: only CTAs of lower index are waited for (sm90_nvfp4_wgmma_stream_k.hpp: no deadlock).
    if (threadIdx.x == 0) {
      for (int contributor = segment.first_cta; contributor < cta; ++contributor) {
        while (load_acquire_gpu(args.stream_flags + contributor) == 0) __nanosleep(64);
      }
    }
    named_barrier_sync(kStreamKBarrier, kConsumerThreads);  // orders every thread's reads after the flags
    for (int contributor = segment.first_cta; contributor < cta; ++contributor) {
      const float4* const theirs = slot(contributor);
#pragma unroll
      for (int quad = 0; quad < kQuads; ++quad) {
        const float4 value = __ldcg(theirs + quad * kConsumerThreads);  // L2: another SM wrote it
        sums[4 * quad] += value.x, sums[4 * quad + 1] += value.y, sums[4 * quad + 2] += value.z, sums[4 * quad + 3] += value.w;
      }
    }
  }
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const std::int64_t row = segment.row_block * rows + warp * kTileRows + lane / 4;
  store_accumulator_quads<kTokens>(args, sums, row, args.alpha * kDecodeCompensation, [](int) { return true; });
  return false;
}

// Raises this CTA's contributor flag (thread 0; after finish_stream_k_segment returned true). The
// release waits for the slot writes to reach the GPU, so the consumer loop raises it a round of
// chunks after the writes instead of at once. A sequentially consistent fence by every thread
// right after them had split row blocks cost ~4.8 us a call on the H200 instead of ~2.9
// (16384x4096 M = 64).
__device__ __forceinline__ void raise_stream_k_flag(const WgmmaGemmArgs& args) {
  if (threadIdx.x == 0) store_release_gpu(args.stream_flags + blockIdx.x, 1u);
}
#endif

// kStreamed: the stream-K grid (a kernel of its own: in one kernel with the data-parallel grid,
// its segment walk and fixup took the 64-token kernel from 96 to 140 registers, which loses
// 28672x8192's second CTA per SM); bounded to stream_k_ctas_per_sm CTAs per SM.
template <int kTokens, int kWarpgroups, bool kStreamed>
__global__ void __launch_bounds__(wgmma_cta_threads(kWarpgroups), kStreamed ? stream_k_ctas_per_sm(kTokens) : 1)
    wgmma_gemm_kernel(const WgmmaGemmArgs args) {
#if FP4GEMM_SM90A_DEVICE
  using Layout = WgmmaSharedLayout<kTokens, kWarpgroups>;
  constexpr int kConsumerWarps = 4 * kWarpgroups;
  constexpr int kConsumerThreads = 32 * kConsumerWarps;
  constexpr int kWeightWarp = kConsumerWarps, kActivationWarp = kConsumerWarps + 1;  // the producers
  constexpr int kThreads = 32 * (kActivationWarp + 1);
  static_assert(kThreads == wgmma_cta_threads(kWarpgroups), "the launch bounds and the launch use this CTA size");
  constexpr int kStages = kWgmmaStages;
  constexpr int kAccumulators = kTokens / 2;

  extern __shared__ __align__(128) std::uint8_t shared[];
  std::uint32_t* scale_table = reinterpret_cast<std::uint32_t*>(shared + Layout::kTableOffset);
  std::uint64_t* full = reinterpret_cast<std::uint64_t*>(shared + Layout::kBarrierOffset);
  std::uint64_t* empty = full + kStages;

  namespace cg = cooperative_groups;
  const cg::cluster_group cluster = cg::this_cluster();
  // The stream-K grid is never clustered (launch_wgmma_gemm), so its kernel drops the multicast paths.
  const int multicast = kStreamed ? 1 : int(cluster.dim_blocks().x), splits = kStreamed ? 1 : int(cluster.dim_blocks().y);
  const int group_rank = int(cluster.block_index().x), split = int(cluster.block_index().y);
  const auto cluster_rank = [&](int group_member, int split_member) { return unsigned(group_member + split_member * multicast); };
  const int chunk_begin = int(std::int64_t(args.chunks) * split / splits);
  const int chunk_count = int(std::int64_t(args.chunks) * (split + 1) / splits) - chunk_begin;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  // The row blocks and chunk ranges this CTA walks: one in the data-parallel grid (its row block,
  // its split's chunks), one per row block it has a part of in the stream-K grid
  // (sm90_nvfp4_wgmma_stream_k.hpp), whose CTAs are never clustered.
  const int segments = kStreamed ? args.stream.segments(int(blockIdx.x)) : 1;
  const auto segment_at = [&](int index) {
    return kStreamed ? stream_k_segment(args.stream, int(blockIdx.x), index)
                    : StreamKSegment{std::int64_t(blockIdx.x), chunk_begin, chunk_count, int(blockIdx.x)};
  };
  // The grid is rounded up to whole multicast groups; CTAs past the last weight record stream the
  // last CTA's tiles again (their rows are past N and never stored).
  const std::int64_t weight_tiles = (args.n + kTileRows * kTilesPerBlock - 1) / (kTileRows * kTilesPerBlock) * kTilesPerBlock;
  const std::int64_t first_tile = min(std::int64_t(blockIdx.x) * Layout::kCtaTiles, weight_tiles - Layout::kCtaTiles);
  const auto first_tile_of = [&](const StreamKSegment& segment) { return kStreamed ? segment.row_block * Layout::kCtaTiles : first_tile; };

  if (threadIdx.x == 0) {
    for (int stage = 0; stage < kStages; ++stage) {
      mbarrier_init(&full[stage], 2);                 // the two producers' expect-bytes arrivals
      mbarrier_init(&empty[stage], 32 * kConsumerWarps * multicast);  // every consumer lane of the group
    }
    fence_barrier_init();
  }
  fill_scale_table(scale_table, threadIdx.x, kThreads);
  cluster.sync();  // every barrier of the cluster is initialised before any CTA copies or arrives

  if (warp >= kConsumerWarps) {
    // Producers: lane 0 of the weight warp streams this split's weight codes and scales through the
    // stage ring (two bulk copies per stage, contiguous inside each chunk's record), lane 0 of the
    // activation warp the packed activations (one per stage). Each expects its own bytes on the
    // stage's full barrier. One lane issuing all three copies paced the ring: a lone CTA took ~420
    // cycles per chunk with no decode and no MMA at all, 8 or 16 stages alike, its producer lane
    // busy on the issue chain and the consumers waiting on full barriers (ncu; H200,
    //). Both loops run over whole rounds unrolled,
    // so stage and barrier addresses are constants; each segment starts again at stage 0, so each
    // stage keeps its own parity (a bit of `parity`; a fresh barrier's wait on parity 1 passes).
    if (lane == 0) {
      const std::uint32_t stages_address = shared_address(shared);
      const std::uint32_t full_address = shared_address(full), empty_address = shared_address(empty);
      const auto stream = [&](auto start_segment, auto copy_stage) {
        unsigned parity = 0;  // bit s: parity of stage s's next fill
        for (int index = 0; index < segments; ++index) {
          const StreamKSegment segment = segment_at(index);
          start_segment(segment);
          for (int base = 0; base < segment.chunk_count; base += kStages) {
#pragma unroll
            for (int stage = 0; stage < kStages; ++stage) {
              if (base + stage < segment.chunk_count) {
                // Released by every CTA of the group.
                mbarrier_wait(empty_address + 8 * stage, ((parity >> stage) & 1) ^ 1);
                parity ^= 1u << stage;
                copy_stage(stages_address + stage * Layout::kStageBytes, full_address + 8 * stage);
              }
            }
          }
        }
      };
      if (warp == kWeightWarp) {
        // The weights depend on nothing the previous kernel writes, so this warp never waits for
        // it (programmatic_launch.cuh): the first ring goes out while the activations are packed.
        const std::uint8_t* records = static_cast<const std::uint8_t*>(args.records);
        const std::uint8_t *codes = nullptr, *scales = nullptr;
        const auto start_segment = [&](const StreamKSegment& segment) {
          codes = records + code_offset(first_tile_of(segment), segment.chunk_begin, args.chunks, 0);
          scales = records + scale_offset(first_tile_of(segment), segment.chunk_begin, args.chunks, 0);
        };
        stream(start_segment, [&](std::uint32_t destination, std::uint32_t barrier) {
          mbarrier_arrive_expect_bytes(barrier, Layout::kCodeBytes + Layout::kScaleBytes);
          bulk_copy_to_shared(destination, codes, Layout::kCodeBytes, barrier);
          bulk_copy_to_shared(destination + Layout::kCodeBytes, scales, Layout::kScaleBytes, barrier);
          codes += kRecordBytes;
          scales += kRecordBytes;
        });
      } else {
        wait_for_prior_grids();  // the packed activations are the previous kernel's output
        const std::uint8_t* activations = nullptr;
        const auto start_segment = [&](const StreamKSegment& segment) {
          activations =
              static_cast<const std::uint8_t*>(args.packed_activations) + std::int64_t(segment.chunk_begin) * Layout::kActivationBytes;
        };
        const std::uint16_t group_mask = std::uint16_t(((1u << multicast) - 1) << (split * multicast));
        const int slice = Layout::kActivationBytes / multicast;
        stream(start_segment, [&](std::uint32_t destination, std::uint32_t barrier) {
          // Every member's slice lands here too, so the stage expects the whole chunk.
          mbarrier_arrive_expect_bytes(barrier, Layout::kActivationBytes);
          if (multicast == 1) {
            bulk_copy_to_shared(destination + Layout::kActivationOffset, activations, Layout::kActivationBytes, barrier);
          } else {
            bulk_copy_to_cluster(destination + Layout::kActivationOffset + group_rank * slice, activations + group_rank * slice,
                                 slice, barrier, group_mask);
          }
          activations += Layout::kActivationBytes;
        });
      }
    }
  }

  float accumulators[kAccumulators];
#pragma unroll
  for (int i = 0; i < kAccumulators; ++i) accumulators[i] = 0.0f;
  wait_for_prior_grids();  // before any output store below (returns at once where a producer waited already)
  if (warp < kConsumerWarps) {
    const std::uint32_t stages = shared_address(shared);
    ConsumerAddresses at{stages + warp * kTileCodeBytes + lane * 16,
                         stages + Layout::kCodeBytes + warp * kTileScaleBytes + lane * 2,
                         shared_address(scale_table),
                         shared_address(full),
                         shared_address(empty),
                         activation_descriptor(stages + Layout::kActivationOffset)};
    // Software-pipelined: the wgmmas of chunk c run while the warp decodes chunk c + 1 into another
    // fragment set, so the tensor pipe and the decode overlap inside each warpgroup;
    // kWgmmaGroupsInFlight groups stay issued while it decodes (sm90_nvfp4_wgmma_tuning.hpp). A fragment set
    // is rewritten only after `wgmma_wait` has retired the group that read it, and no instruction
    // touches a fragment of an in-flight group (else ptxas serializes every wgmma, C7513).
    constexpr int kInFlight = kWgmmaGroupsInFlight, kSets = kInFlight + 1;
    std::uint32_t fragments[kSets][kBlocksPerChunk][4];
    const auto decode_chunk = [&](int stage, std::uint32_t(&fragments)[kBlocksPerChunk][4]) {
      decode_tile_at(at.code + stage * Layout::kStageBytes, at.scale + stage * Layout::kStageBytes, at.table, fragments);
    };
    // Every lane releases its own reads of the stage: an arrive orders only the arriving thread's
    // earlier accesses before the producer's refill. (One arrival per warp after __syncwarp, to
    // cut a multicast group's remote arrivals 32-fold, left multicast 1.6-2.6x slower than none
    // and racecheck reports the other lanes' reads:.)
    const auto release = [&](int stage) {
      if (multicast == 1) {
        mbarrier_arrive(at.empty + 8 * stage);
      } else {
        // Not unrolled: the rule never multicasts, and this loop unrolled in every unrolled step of
        // the ring was most of the kernel's length (5,800 instructions, 3,470 without it and the
        // pinned addresses; instruction-cache misses showed in ncu as no_instruction).
#pragma unroll 1
        for (int member = 0; member < multicast; ++member) mbarrier_arrive_in_cta(&empty[stage], cluster_rank(member, split));
      }
    };
    // The loop is unrolled over the whole ring, so each step's stage is a compile-time constant and
    // the stage and phase bookkeeping leaves the per-chunk chain. H200, against two chunks per
    // iteration: 17 and 32 tokens 5-12% faster
    // (28672x8192 M = 32 73.6 -> 65.1 us), 48 and 64 tokens within -1% to +2.4%.
    // Bit s of `parity` is the parity of stage s's next fill (segments restart at stage 0).
    unsigned parity = 0;
    const auto wait_full = [&](int stage) {
      mbarrier_wait(at.full + 8 * stage, (parity >> stage) & 1);
      parity ^= 1u << stage;
    };
    int segment_chunks = 0;     // chunks of the segment being walked
    bool flag_pending = false;  // a contributor's slot is written, its flag not yet raised
    // Chunk `chunk` (in stage `stage`, decoded into `current`): issue its wgmmas, retire the group
    // kInFlight chunks older, release that chunk's stage, then decode chunk + 1 into `following`.
    // The count is the same for the whole CTA, so every warpgroup reaches each wgmma together.
    const auto step = [&](int chunk, int stage, std::uint32_t(&current)[kBlocksPerChunk][4],
                          std::uint32_t(&following)[kBlocksPerChunk][4]) {
      at.pin();
      issue_chunk_and_retire_older<kTokens, kInFlight>(accumulators, current,
                                                       at.first_descriptor + std::uint32_t(stage * Layout::kStageBytes >> 4));
      if (chunk >= kInFlight) release((stage - kInFlight + kStages) % kStages);
      if (chunk + 1 < segment_chunks) {
        const int next = stage + 1 == kStages ? 0 : stage + 1;
        wait_full(next);
        decode_chunk(next, following);
      }
    };
    for (int index = 0; index < segments; ++index) {
      const StreamKSegment segment = segment_at(index);
      segment_chunks = segment.chunk_count;
      if (index > 0) {
#pragma unroll
        for (int i = 0; i < kAccumulators; ++i) accumulators[i] = 0.0f;
      }
      if (segment_chunks > 0) {
        wait_full(0);
        decode_chunk(0, fragments[0]);
      }
      for (int base = 0; base < segment_chunks; base += kStages) {
#pragma unroll
        for (int stage = 0; stage < kStages; ++stage) {
          if (base + stage < segment_chunks) step(base + stage, stage, fragments[stage % kSets], fragments[(stage + 1) % kSets]);
        }
        if (kStreamed && flag_pending) raise_stream_k_flag(args), flag_pending = false;  // a round after the slot writes
      }
      wgmma_wait<0>();
#pragma unroll
      for (int i = 0; i < kAccumulators; ++i) pin_register(accumulators[i]);
#pragma unroll
      for (int back = kInFlight; back >= 1; --back) {
        if (segment_chunks >= back) release((segment_chunks - back) % kStages);
      }
      // Only the epilogue is left: the next kernel on the stream may be scheduled now
      // (programmatic_launch.cuh). Earlier, its CTAs would take the SMs' free slots and sit there.
      if (index == segments - 1) allow_dependent_launch();
      if constexpr (kStreamed) {
        flag_pending = finish_stream_k_segment<kTokens, kConsumerThreads>(args, segment, accumulators, Layout::kCtaRows);
      }
    }
    if (kStreamed && flag_pending) raise_stream_k_flag(args);  // the CTA's last segment contributed
  }
  if (kStreamed) return;  // each segment's outputs are stored (or handed on) above
  // The epilogue. Without a K split (a CTA alone, or a multicast group of CTAs with rows of their
  // own) each CTA stores its accumulators straight from registers (store_accumulator_quads). In a
  // K-split cluster each CTA leaves its partial sums in shared memory, quad-major (consecutive
  // lanes 16 bytes apart: no bank conflicts), and CTA `split` of a column sums, in rank order
  // (deterministic), the partials of every splits-th accumulator quad, each lane reading the same
  // lane's floats of every member, and stores them.
  const int cluster_ctas = multicast * splits;
  if (cluster_ctas == 1 && warp >= kConsumerWarps) return;  // the producers: nothing left to wait for
  const float scale = args.alpha * kDecodeCompensation;
  const std::int64_t row = std::int64_t(blockIdx.x) * Layout::kCtaRows + warp * kTileRows + lane / 4;
  if (splits == 1) {
    // A multicast group: this CTA's releases of its peers' stages are done (and ordered before the
    // arrival); its own shared memory must stay alive until the peers' remote arrivals on its
    // empty barriers are done (the wait below).
    if (cluster_ctas > 1) cluster_arrive_release();
    if (warp < kConsumerWarps) store_accumulator_quads<kTokens>(args, accumulators, row, scale, [](int) { return true; });
  } else {
    __syncthreads();  // every warpgroup's wgmmas have read their stages: the partial sums may reuse them
    float4* partial = reinterpret_cast<float4*>(shared);
    constexpr int kQuads = kAccumulators / 4;
    if (warp < kConsumerWarps) {
#pragma unroll
      for (int quad = 0; quad < kQuads; ++quad) {
        partial[quad * kConsumerThreads + threadIdx.x] =
            make_float4(accumulators[4 * quad], accumulators[4 * quad + 1], accumulators[4 * quad + 2], accumulators[4 * quad + 3]);
      }
    }
    cluster.sync();  // every member's partial sums are in its shared memory
    const auto owned = [&](int quad) { return (quad & (splits - 1)) == split; };  // splits is a power of two
    float sums[kAccumulators];
    if (warp < kConsumerWarps) {
#pragma unroll
      for (int i = 0; i < kAccumulators; ++i) sums[i] = 0.0f;
      const std::uint32_t lane_partial = shared_address(partial + threadIdx.x);
#pragma unroll 1
      for (int member = 0; member < splits; ++member) {
#pragma unroll
        for (int quad = 0; quad < kQuads; ++quad) {
          if (!owned(quad)) continue;
          const float4 value = load_float4_in_cta(lane_partial + 16 * kConsumerThreads * quad, cluster_rank(group_rank, member));
          sums[4 * quad] += value.x, sums[4 * quad + 1] += value.y, sums[4 * quad + 2] += value.z, sums[4 * quad + 3] += value.w;
        }
      }
    }
    cluster_arrive_release();  // this CTA's reads of the members' partial sums are done
    if (warp < kConsumerWarps) store_accumulator_quads<kTokens>(args, sums, row, scale, owned);
  }
  if (cluster_ctas > 1) cluster_wait();  // keeps this CTA's shared memory alive until the cluster is done with it
#else
  __trap();  // the host launches this kernel on SM 9.0 only, where the sm_90a build runs
#endif
}

template <int kTokens, int kWarpgroups, bool kStreamed>
cudaError_t launch(const WgmmaGemmArgs& args, int splits, int multicast, bool programmatic, int multiprocessors, cudaStream_t stream) {
  using Layout = WgmmaSharedLayout<kTokens, kWarpgroups>;
  const auto kernel = wgmma_gemm_kernel<kTokens, kWarpgroups, kStreamed>;
  // The stream-K grid is one row of unclustered CTAs (launch_wgmma_gemm checks splits = multicast = 1).
  const std::int64_t ctas_n = kStreamed ? args.stream.ctas : grid_ctas_along_n(WgmmaShape{kTokens, kWarpgroups, splits, multicast}, args.n);
  // One CTA per SM: the most shared memory a CTA may have leaves no room for a second.
  const int shared_bytes = wgmma_one_cta_per_sm(ctas_n * splits, multiprocessors) ? int(kSm90SharedBytesPerBlock) : Layout::kBytes;
  if (const cudaError_t raised = fp4gemm::cuda::raise_dynamic_shared_limit(reinterpret_cast<const void*>(kernel), shared_bytes);
      raised != cudaSuccess) {
    return raised;
  }
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(unsigned(ctas_n), unsigned(splits));
  config.blockDim = dim3(wgmma_cta_threads(kWarpgroups));
  config.dynamicSmemBytes = shared_bytes;
  config.stream = stream;
  cudaLaunchAttribute attributes[2];
  attributes[0].id = cudaLaunchAttributeClusterDimension;
  attributes[0].val.clusterDim.x = unsigned(multicast);
  attributes[0].val.clusterDim.y = unsigned(splits);
  attributes[0].val.clusterDim.z = 1;
  attributes[1] = programmatic_launch_attribute(programmatic);
  // A cluster of one CTA is launched as a plain grid: the cluster calls in the kernel then see
  // clusters of one, as they do for the attribute, and each call is ~0.6 us shorter (H200, the rule's
  // 12288x4096 M = 64 30.6 -> 30.1 us).
  const bool clustered = multicast * splits > 1;
  config.attrs = clustered ? attributes : attributes + 1;
  config.numAttrs = clustered ? 2 : 1;
  return cudaLaunchKernelEx(&config, kernel, args);
}

#define FP4GEMM_WGMMA_SHAPES(X) X(16, 1) X(16, 2) X(32, 1) X(32, 2) X(64, 1) X(64, 2)

}  // namespace

cudaError_t launch_wgmma_gemm(const WgmmaGemmArgs& args, const WgmmaShape& shape, bool programmatic, int multiprocessors,
                              cudaStream_t stream) {
  if (!is_compiled_wgmma_shape(shape)) return cudaErrorInvalidConfiguration;
  if ((shape.stream_ctas > 0) != (args.stream.ctas > 0)) return cudaErrorInvalidValue;
  if (args.stream.ctas > 0 && (args.stream.ctas > args.stream.units() || args.stream.row_blocks != grid_ctas_along_n(shape, args.n) ||
                               args.stream.chunks != args.chunks || args.stream_flags == nullptr || args.stream_partials == nullptr)) {
    return cudaErrorInvalidValue;  // a partition that does not match the problem, or no workspace
  }
  const bool streamed = shape.stream_ctas > 0;
#define FP4GEMM_WGMMA_LAUNCH(t, wg)                                                                    \
  if (shape.tokens == t && shape.warpgroups == wg) {                                                \
    if (!streamed) return launch<t, wg, false>(args, shape.splits, shape.multicast, programmatic, multiprocessors, stream); \
    if constexpr (wg == kStreamKWarpgroups) return launch<t, wg, true>(args, 1, 1, programmatic, multiprocessors, stream); \
  }
  FP4GEMM_WGMMA_SHAPES(FP4GEMM_WGMMA_LAUNCH)
#undef FP4GEMM_WGMMA_LAUNCH
  return cudaErrorInvalidConfiguration;
}

namespace {
template <int kTokens>
int stream_k_resident_ctas_per_sm() {
  const int bytes = WgmmaSharedLayout<kTokens, kStreamKWarpgroups>::kBytes;
  const auto kernel = wgmma_gemm_kernel<kTokens, kStreamKWarpgroups, true>;
  if (fp4gemm::cuda::raise_dynamic_shared_limit(reinterpret_cast<const void*>(kernel), bytes) != cudaSuccess) return 0;
  int ctas = 0;
  if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&ctas, kernel,
                                                    wgmma_cta_threads(kStreamKWarpgroups), bytes) != cudaSuccess) {
    return 0;
  }
  return ctas;
}
}  // namespace

int wgmma_stream_k_resident_ctas_per_sm(int tokens) {
  switch (tokens) {
    case 16: return stream_k_resident_ctas_per_sm<16>();
    case 32: return stream_k_resident_ctas_per_sm<32>();
    case 64: return stream_k_resident_ctas_per_sm<64>();
    default: return 0;
  }
}

bool is_compiled_wgmma_shape(const WgmmaShape& shape) {
  if (shape.splits < 1 || shape.multicast < 1 || shape.splits * shape.multicast > kMaxWgmmaCluster) return false;
  if (shape.stream_ctas < 0) return false;
  if (shape.stream_ctas > 0 && (shape.splits != 1 || shape.multicast != 1 || shape.warpgroups != kStreamKWarpgroups)) return false;
  if (shape.multicast & (shape.multicast - 1)) return false;  // a power of two divides the activation chunk
  if (shape.splits & (shape.splits - 1)) return false;        // and gives each quad one owner (quad & (splits - 1))
#define FP4GEMM_WGMMA_MATCH(t, wg) \
  if (shape.tokens == t && shape.warpgroups == wg) return true;
  FP4GEMM_WGMMA_SHAPES(FP4GEMM_WGMMA_MATCH)
#undef FP4GEMM_WGMMA_MATCH
  return false;
}

}  // namespace fp4gemm::cuda_nvfp4
