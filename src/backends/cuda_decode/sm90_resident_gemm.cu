// NVFP4 x BF16 GEMM for 16 < M <= 64 on Hopper with the activations resident in shared memory
// (design and sizing: docs/design/activation-stationary-wgmma.md). The wgmma kernel
// (sm90_wgmma_gemm.cu) streams every chunk's activations beside its weights, so at 64 tokens each
// 128-row block re-reads the whole activation matrix from L2 (8 KiB per chunk against 4.5 KiB of
// weights). Here a CTA loads its K slice of the activations once and streams the weights of many
// row blocks over it.
//
// - The grid is persistent: as many clusters as fit the GPU at once (at most one per row block);
//   cluster c takes the 128-row blocks c, c + clusters, ... A cluster is `splits` CTAs along K:
//   CTA s owns the chunks [chunks * s / splits, chunks * (s + 1) / splits) of every row block.
// - A CTA is kResidentKGroups K groups of two consumer warpgroups (each group covers the row
//   block's 128 rows over every kResidentKGroups-th chunk of the slice) and one producer warp. The
//   producer lane copies the CTA's
//   activation slice into shared memory once (one bulk copy and one barrier per chunk, so the first
//   row block starts as soon as its first chunk lands), then streams the weight records (one
//   bulk copy of 4.5 KiB per row block and chunk) through a ring of kResidentStages stages.
// - Consumers decode and multiply exactly as in the wgmma kernel (sm90_wgmma_chunk.cuh), the
//   wgmmas of a group's chunk c overlapping the decode of its next one.
// - After each row block, CTA s of the cluster owns rows [s, s + 1) * 128 / splits of it. Every
//   consumer thread sends its K group's FP32 partial sums straight from its accumulators to the owners'
//   receive buffers (st.async into distributed shared memory: no round trip, counted on the
//   owner's "received" barrier); each owner then sums the splits' partials of its rows from its
//   own shared memory in rank order (deterministic) and stores them, and tells every sender that
//   its buffer is free again ("sent-free", one remote arrival per CTA). A CTA sends the next
//   row block's partials only once every owner has freed its buffer, and exits only once its own
//   last ones have been read. The producer keeps filling the ring meanwhile, so the weight stream
//   runs on through the reduction. (A first version in which owners read the other CTAs' partial
//   tiles with generic loads spent over half of its time in those loads: ncu, session 8.)
#include <cooperative_groups.h>

#include <map>
#include <mutex>
#include <tuple>

#include "backends/cuda_common/programmatic_launch.cuh"
#include "backends/cuda_decode/sm90_resident_gemm.cuh"
#include "backends/cuda_decode/sm90_wgmma_chunk.cuh"

namespace fp4gemm::cuda_decode {
namespace {

constexpr int kConsumerThreads = 128 * kResidentWarpgroups;
constexpr int kResidentThreads = kConsumerThreads + 32;  // plus the producer warp
constexpr unsigned kMaxQueriedClusters = 1024;            // more than any GPU holds at once

template <int kTokens>
__global__ void __launch_bounds__(kResidentThreads, 1) resident_gemm_kernel(const WgmmaGemmArgs args) {
#if FP4GEMM_SM90A_DEVICE
  constexpr ResidentLayout kLayout{kTokens};
  constexpr int kConsumerWarps = kConsumerThreads / 32;
  constexpr int kStages = kResidentStages;
  constexpr int kAccumulators = kTokens / 2;
  constexpr int kRows = ResidentLayout::kRows;
  constexpr int kStride = kLayout.receive_stride();
  constexpr int kChunkBytes = kLayout.chunk_bytes();
  constexpr unsigned kConsumerBarrier = 1;  // named barrier of the consumer warps (0 is __syncthreads')
  static_assert(kRows == kTileRows * kTilesPerBlock, "a row block is one weight record per chunk");

  extern __shared__ __align__(128) std::uint8_t shared[];
  float* received = reinterpret_cast<float*>(shared + kLayout.receive_offset());
  std::uint32_t* scale_table = reinterpret_cast<std::uint32_t*>(shared + kLayout.table_offset());
  std::uint64_t* full = reinterpret_cast<std::uint64_t*>(shared + kLayout.barrier_offset());
  std::uint64_t* empty = full + kStages;
  std::uint64_t* received_all = empty + kStages;
  std::uint64_t* sent_free = received_all + 1;
  std::uint64_t* activation_full = sent_free + 1;
  std::uint8_t* resident = shared + kLayout.activation_offset();

  namespace cg = cooperative_groups;
  const cg::cluster_group cluster = cg::this_cluster();
  const int splits = int(cluster.dim_blocks().y), split = int(cluster.block_index().y);  // cluster = 1 x splits
  const int chunk_begin = int(std::int64_t(args.chunks) * split / splits);
  const int chunk_count = int(std::int64_t(args.chunks) * (split + 1) / splits) - chunk_begin;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int clusters = int(gridDim.x);
  const int row_blocks = (args.n + kRows - 1) / kRows;
  const int rounds = row_blocks > int(blockIdx.x) ? (row_blocks - int(blockIdx.x) + clusters - 1) / clusters : 0;

  if (threadIdx.x == 0) {
    for (int stage = 0; stage < kStages; ++stage) {
      mbarrier_init(&full[stage], 1);                 // the producer's expect-bytes arrival
      mbarrier_init(&empty[stage], kConsumerThreads / kResidentKGroups);  // every lane of the K group that reads it
    }
    mbarrier_init(received_all, 1);  // this CTA's expect-bytes arrival, then the senders' bytes
    mbarrier_init(sent_free, splits);  // one arrival per owner
    for (int chunk = 0; chunk < chunk_count; ++chunk) mbarrier_init(&activation_full[chunk], 1);
    fence_barrier_init();
  }
  fill_scale_table(scale_table, threadIdx.x, kResidentThreads);
  cluster.sync();  // every barrier of the cluster is initialised before any CTA copies or arrives

  if (warp == kConsumerWarps) {
    if (lane == 0 && rounds > 0) {
      const std::uint8_t* records = static_cast<const std::uint8_t*>(args.records);
      const std::int64_t items = std::int64_t(rounds) * chunk_count;  // (row block, chunk) pairs, in order
      const auto copy_weights = [&](std::int64_t item, int stage) {
        const std::int64_t row_block = blockIdx.x + item / chunk_count * clusters;
        const std::int64_t chunk = chunk_begin + item % chunk_count;
        mbarrier_arrive_expect_bytes(&full[stage], kRecordBytes);
        bulk_copy_to_shared(shared + stage * ResidentLayout::kStageBytes, records + (row_block * args.chunks + chunk) * kRecordBytes,
                            kRecordBytes, &full[stage]);
      };
      // The first ring's weights go out before the wait for the kernel that packed the
      // activations (programmatic_launch.cuh): they are all this CTA can fetch meanwhile.
      const int early = int(min(items, std::int64_t(kStages)));
      for (int item = 0; item < early; ++item) copy_weights(item, item);
      wait_for_prior_grids();
      const std::uint8_t* slice = static_cast<const std::uint8_t*>(args.packed_activations) + std::int64_t(chunk_begin) * kChunkBytes;
      for (int chunk = 0; chunk < chunk_count; ++chunk) {
        mbarrier_arrive_expect_bytes(&activation_full[chunk], kChunkBytes);
        bulk_copy_to_shared(resident + chunk * kChunkBytes, slice + chunk * kChunkBytes, kChunkBytes, &activation_full[chunk]);
      }
      for (std::int64_t item = early; item < items; ++item) {
        const int stage = int(item % kStages);
        mbarrier_wait(&empty[stage], unsigned(item / kStages + 1) & 1);  // the consumers released the stage's last fill
        copy_weights(item, stage);
      }
    }
  }

  if (warp < kConsumerWarps || lane != 0) wait_for_prior_grids();  // before any output store below
  if (warp < kConsumerWarps) {
    // K group `group` (kWarpsPerGroup warps, 128 rows) takes the chunks group, group + kGroups, ...
    // of each row block's K slice; warp `tile` of it decodes 16 rows of each.
    constexpr int kGroups = kResidentKGroups, kWarpsPerGroup = kConsumerWarps / kGroups;
    const int group = warp / kWarpsPerGroup, tile = warp % kWarpsPerGroup;
    float accumulators[kAccumulators];
    const std::uint32_t resident_address = shared_address(resident);
    std::uint32_t fragments_a[kBlocksPerChunk][4], fragments_b[kBlocksPerChunk][4];
    // The producer streams (row block, chunk) items in order; item i sits in stage i % kStages, its
    // fill number i / kStages giving the full barrier's parity.
    int round = 0;
    const auto item_of = [&](int chunk) { return std::int64_t(round) * chunk_count + chunk; };
    // A stage holds weights only, which nothing but this decode reads (the wgmmas take them from
    // registers), so each lane releases the stage as soon as its loads from it are done: the
    // producer refills it while the chunk is still being multiplied (the wgmma kernel must hold
    // its stages until the chunk's wgmmas retire, since they read its activations).
    const auto wait_and_decode = [&](int chunk, std::uint32_t(&fragments)[kBlocksPerChunk][4]) {
      const std::int64_t item = item_of(chunk);
      const int stage = int(item % kStages);
      mbarrier_wait(&full[stage], unsigned(item / kStages) & 1);
      decode_stage_tile(shared + stage * ResidentLayout::kStageBytes, kRecordCodeBytes, tile, lane, scale_table, fragments);
      mbarrier_arrive(&empty[stage]);
    };
    // As in the wgmma kernel: chunk `chunk` (decoded into `current`) is multiplied, the previous
    // chunk's group retired, then this group's next chunk decoded into `following`.
    const auto step = [&](int chunk, std::uint32_t(&current)[kBlocksPerChunk][4], std::uint32_t(&following)[kBlocksPerChunk][4]) {
      if (round == 0) mbarrier_wait(&activation_full[chunk], 0);
#pragma unroll
      for (int i = 0; i < kAccumulators; ++i) pin_register(accumulators[i]);
      wgmma_fence();
      issue_chunk_wgmmas<kTokens>(accumulators, current, resident_address + chunk * kChunkBytes);
      wgmma_commit();
      wgmma_wait<1>();  // the previous chunk's group: its fragment set is free again
#pragma unroll
      for (int i = 0; i < kAccumulators; ++i) pin_register(accumulators[i]);
      if (chunk + kGroups < chunk_count) wait_and_decode(chunk + kGroups, following);
    };
    // Rows [row_begin, row_begin + slice_rows) of each row block are this CTA's to sum and store
    // (splits is a power of two up to 16, so the slice is too, and at least 8 rows).
    const int slice_rows = kRows / splits, row_begin = slice_rows * split;
    const int slice_shift = __ffs(slice_rows) - 1;
    const int outputs = slice_rows * min(args.m, kTokens);
    const float scale = args.alpha * kDecodeCompensation;

    for (; round < rounds; ++round) {
#pragma unroll
      for (int i = 0; i < kAccumulators; ++i) accumulators[i] = 0.0f;
      if (group < chunk_count) wait_and_decode(group, fragments_a);
      for (int chunk = group; chunk < chunk_count; chunk += 2 * kGroups) {
        step(chunk, fragments_a, fragments_b);
        if (chunk + kGroups < chunk_count) step(chunk + kGroups, fragments_b, fragments_a);
      }
      wgmma_wait<0>();
#pragma unroll
      for (int i = 0; i < kAccumulators; ++i) pin_register(accumulators[i]);
      // Only the last reduction is left: the next kernel on the stream may be scheduled now.
      if (round + 1 == rounds) allow_dependent_launch();

      // Send: each warp's 16 rows, accumulators [4j + 0, 1] row g, tokens 8j + 2t + {0, 1}, and
      // [4j + 2, 3] the same tokens of row g + 8, to the rows' owners, once every owner has
      // summed what this CTA sent it for the previous row block.
      // A cluster of one CTA keeps its partials: plain stores and a barrier among the consumers
      // (distributed shared memory needs a cluster of two or more; compute-sanitizer reports
      // st.async within a cluster of one as an invalid write).
      const bool alone = splits == 1;
      if (round > 0 && !alone) mbarrier_wait_cluster(sent_free, (round - 1) & 1);
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int row = tile * kTileRows + lane / 4 + 8 * half;
        const unsigned owner = unsigned(row >> slice_shift);
        float* slot = received + ((group * splits + split) * slice_rows + (row & (slice_rows - 1))) * kStride + 2 * (lane % 4);
#pragma unroll
        for (int j = 0; j < kTokens / 8; ++j) {
          const float first = accumulators[4 * j + 2 * half], second = accumulators[4 * j + 2 * half + 1];
          if (alone) {
            *reinterpret_cast<float2*>(slot + 8 * j) = make_float2(first, second);
          } else {
            store_async_in_cta(slot + 8 * j, first, second, received_all, owner);
          }
        }
      }
      // Receive: every K group of every CTA sends this one its partial sums of slice_rows rows x
      // kTokens tokens.
      if (alone) {
        named_barrier_sync(kConsumerBarrier, kConsumerThreads);
      } else {
        if (threadIdx.x == 0) mbarrier_arrive_expect_bytes(received_all, kGroups * kRows * kTokens * 4);
        mbarrier_wait(received_all, round & 1);
      }

      // Sum this CTA's rows over the splits (in rank order) and store them.
      const auto sum_of = [&](int row, int token) {
        const float* column = received + row * kStride + token;
        float sum = 0.0f;
        for (int sender = 0; sender < kResidentKGroups * splits; ++sender) sum += column[sender * slice_rows * kStride];
        return sum;
      };
      store_row_slice<kConsumerThreads>(args, outputs, slice_rows,
                                        (blockIdx.x + std::int64_t(round) * clusters) * kRows + row_begin, scale, sum_of);
      named_barrier_sync(kConsumerBarrier, kConsumerThreads);  // every consumer has read the buffer
      if (threadIdx.x == 0 && !alone) {
        for (int member = 0; member < splits; ++member) mbarrier_arrive_in_cta(sent_free, unsigned(member));
      }
    }
    // Every owner has read what this CTA sent last (so every copy into or out of it is done).
    if (rounds > 0 && splits > 1) mbarrier_wait_cluster(sent_free, (rounds - 1) & 1);
  }
#else
  __trap();  // the host launches this kernel on SM 9.0 only, where the sm_90a build runs
#endif
}

// Clusters of one shape that fit the GPU at once, asked from CUDA once per (device, kernel, splits,
// shared memory). The query's grid is larger than any GPU holds, so that the answer is the GPU's
// limit whatever the launch's N (the launch then takes at most one cluster per row block).
int max_active_clusters(const void* kernel, cudaLaunchConfig_t config, int splits) {
  static std::mutex mutex;
  static std::map<std::tuple<int, const void*, int, std::size_t>, int> cache;
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) return 0;
  const auto key = std::make_tuple(device, kernel, splits, config.dynamicSmemBytes);
  const std::lock_guard<std::mutex> lock(mutex);
  if (const auto found = cache.find(key); found != cache.end()) return found->second;
  config.gridDim = dim3(kMaxQueriedClusters, unsigned(splits));
  int clusters = 0;
  if (cudaOccupancyMaxActiveClusters(&clusters, kernel, &config) != cudaSuccess) return 0;
  cache.emplace(key, clusters);
  return clusters;
}

// The launch configuration (grid along N left at one cluster) and its shared memory attributes;
// cudaErrorInvalidConfiguration when the K slice does not fit the GPU's shared memory.
template <int kTokens>
cudaError_t configure(int chunks, int splits, bool programmatic, cudaStream_t stream, cudaLaunchConfig_t& config,
                      cudaLaunchAttribute (&attributes)[2]) {
  constexpr ResidentLayout kLayout{kTokens};
  const int slice_chunks = (chunks + splits - 1) / splits;
  if (slice_chunks > kMaxResidentSliceChunks) return cudaErrorInvalidConfiguration;
  const std::int64_t bytes = kLayout.bytes(slice_chunks);
  int device = 0, shared_limit = 0;
  cudaError_t status = cudaGetDevice(&device);
  if (status == cudaSuccess) status = cudaDeviceGetAttribute(&shared_limit, cudaDevAttrMaxSharedMemoryPerBlockOptin, device);
  if (status != cudaSuccess) return status;
  if (bytes > shared_limit) return cudaErrorInvalidConfiguration;
  const auto kernel = resident_gemm_kernel<kTokens>;
  status = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes));
  if (status == cudaSuccess && splits > 8) status = cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
  if (status != cudaSuccess) return status;
  config = {};
  config.gridDim = dim3(1, unsigned(splits));
  config.blockDim = dim3(kResidentThreads);
  config.dynamicSmemBytes = std::size_t(bytes);
  config.stream = stream;
  attributes[0].id = cudaLaunchAttributeClusterDimension;
  attributes[0].val.clusterDim.x = 1;
  attributes[0].val.clusterDim.y = unsigned(splits);
  attributes[0].val.clusterDim.z = 1;
  attributes[1] = programmatic_launch_attribute(programmatic);
  config.attrs = attributes;
  config.numAttrs = 2;
  return cudaSuccess;
}

template <int kTokens>
int active_clusters(int chunks, int splits) {
  cudaLaunchConfig_t config;
  cudaLaunchAttribute attributes[2];
  if (configure<kTokens>(chunks, splits, false, nullptr, config, attributes) != cudaSuccess) return 0;
  return max_active_clusters(reinterpret_cast<const void*>(resident_gemm_kernel<kTokens>), config, splits);
}

template <int kTokens>
cudaError_t launch(const WgmmaGemmArgs& args, int splits, bool programmatic, cudaStream_t stream) {
  cudaLaunchConfig_t config;
  cudaLaunchAttribute attributes[2];
  const cudaError_t status = configure<kTokens>(args.chunks, splits, programmatic, stream, config, attributes);
  if (status != cudaSuccess) return status;
  int clusters = max_active_clusters(reinterpret_cast<const void*>(resident_gemm_kernel<kTokens>), config, splits);
  if (clusters < 1) return cudaErrorInvalidConfiguration;
  resident_clusters_override(clusters);
  config.gridDim = dim3(unsigned(std::min<std::int64_t>(ResidentLayout::row_blocks(args.n), clusters)), unsigned(splits));
  return cudaLaunchKernelEx(&config, resident_gemm_kernel<kTokens>, args);
}

#define FP4GEMM_RESIDENT_TOKENS(X) X(32) X(64)

}  // namespace

cudaError_t launch_resident_gemm(const WgmmaGemmArgs& args, const ResidentShape& shape, bool programmatic, cudaStream_t stream) {
  if (!is_compiled_resident_shape(shape)) return cudaErrorInvalidConfiguration;
#define FP4GEMM_RESIDENT_LAUNCH(t) \
  if (shape.tokens == t) return launch<t>(args, shape.splits, programmatic, stream);
  FP4GEMM_RESIDENT_TOKENS(FP4GEMM_RESIDENT_LAUNCH)
#undef FP4GEMM_RESIDENT_LAUNCH
  return cudaErrorInvalidConfiguration;
}

int resident_active_clusters(const ResidentShape& shape, int chunks) {
  if (!is_compiled_resident_shape(shape)) return 0;
#define FP4GEMM_RESIDENT_QUERY(t) \
  if (shape.tokens == t) return active_clusters<t>(chunks, shape.splits);
  FP4GEMM_RESIDENT_TOKENS(FP4GEMM_RESIDENT_QUERY)
#undef FP4GEMM_RESIDENT_QUERY
  return 0;
}

bool is_compiled_resident_shape(const ResidentShape& shape) {
  if (shape.splits < 1 || shape.splits > kMaxResidentSplits || (shape.splits & (shape.splits - 1))) return false;
#define FP4GEMM_RESIDENT_MATCH(t) \
  if (shape.tokens == t) return true;
  FP4GEMM_RESIDENT_TOKENS(FP4GEMM_RESIDENT_MATCH)
#undef FP4GEMM_RESIDENT_MATCH
  return false;
}

}  // namespace fp4gemm::cuda_decode
