// NVFP4 x BF16 GEMM for 16 < M <= 64 on Hopper with the weight decode in warps of its own
// (design: docs/design/decoder-warps-wgmma.md). In the wgmma kernel (sm90_wgmma_gemm.cu) each
// consumer warpgroup decodes its rows and then issues their wgmmas, and that serial chain binds it
// (bench/results/2026-11-30-h200-s8.md). Here the grid is the same (one CTA per 128-row block and
// K split, the splits of a cluster reduced through distributed shared memory at the end), but a
// CTA is:
// - a producer warp, whose lane fills two rings with bulk copies: the weight records (4.5 KiB per
//   chunk) and the chunk's packed activations;
// - kDecoderWarps decoder warps (two sets of eight on alternate chunks; warp t of a set takes the
//   16-row tile t), which decode each record into the wgmma A image of a decoded stage (BF16,
//   decoder_layout.hpp), releasing the weight stage as soon as they have read it;
// - two consumer warpgroups (64 rows each), which multiply each decoded stage with the chunk's
//   activations, both operands in shared memory, and release both stages once those wgmmas
//   have retired.
#include <cooperative_groups.h>

#include "backends/cuda_decode/decoder_layout.hpp"
#include "backends/cuda_decode/programmatic_launch.cuh"
#include "backends/cuda_decode/sm90_decoder_gemm.cuh"
#include "backends/cuda_decode/sm90_wgmma_chunk.cuh"

namespace fp4gemm::cuda_decode {
namespace {

constexpr int kConsumerWarps = 8;  // two warpgroups
constexpr int kDecoderSets = 2;  // sets of decoder warps, each taking every other chunk
constexpr int kDecoderSetWarps = kDecoderWarps / kDecoderSets;
constexpr int kProducerWarp = kConsumerWarps + kDecoderWarps;
constexpr int kDecoderThreads = 32 * (kProducerWarp + 1);
static_assert(kDecoderSetWarps == kTilesPerBlock, "a decoder set has one warp per 16-row tile of the row block");

template <int kTokens>
__global__ void __launch_bounds__(kDecoderThreads, 1) decoder_gemm_kernel(const WgmmaGemmArgs args) {
#if FP4GEMM_SM90A_DEVICE
  constexpr DecoderLayout kLayout{kTokens};
  constexpr int kConsumerThreads = 32 * kConsumerWarps;
  constexpr int kWeightStages = kDecoderWeightStages, kActivationStages = kDecoderActivationStages;
  constexpr int kDecodedStages = kDecoderDecodedStages;
  constexpr int kAccumulators = kTokens / 2;
  constexpr int kRows = DecoderLayout::kRows;
  constexpr int kChunkBytes = kLayout.chunk_bytes();
  constexpr int kStride = kLayout.partial_stride();

  extern __shared__ __align__(128) std::uint8_t shared[];
  std::uint8_t* activations = shared + kLayout.activation_offset();
  std::uint8_t* decoded = shared + kLayout.decoded_offset();
  std::uint32_t* scale_table = reinterpret_cast<std::uint32_t*>(shared + kLayout.table_offset());
  std::uint64_t* weight_full = reinterpret_cast<std::uint64_t*>(shared + kLayout.barrier_offset());
  std::uint64_t* weight_empty = weight_full + kWeightStages;
  std::uint64_t* activation_full = weight_empty + kWeightStages;
  std::uint64_t* activation_empty = activation_full + kActivationStages;
  std::uint64_t* decoded_full = activation_empty + kActivationStages;
  std::uint64_t* decoded_empty = decoded_full + kDecodedStages;

  namespace cg = cooperative_groups;
  const cg::cluster_group cluster = cg::this_cluster();
  const int splits = int(cluster.dim_blocks().y), split = int(cluster.block_index().y);  // cluster = 1 x splits
  const int chunk_begin = int(std::int64_t(args.chunks) * split / splits);
  const int chunk_count = int(std::int64_t(args.chunks) * (split + 1) / splits) - chunk_begin;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;

  if (threadIdx.x == 0) {
    for (int stage = 0; stage < kWeightStages; ++stage) {
      mbarrier_init(&weight_full[stage], 1);                       // the producer's expect-bytes arrival
      mbarrier_init(&weight_empty[stage], 32 * kDecoderSetWarps);  // every lane of the set that decodes it
    }
    for (int stage = 0; stage < kActivationStages; ++stage) {
      mbarrier_init(&activation_full[stage], 1);
      mbarrier_init(&activation_empty[stage], kConsumerThreads);  // every consumer lane
    }
    for (int stage = 0; stage < kDecodedStages; ++stage) {
      mbarrier_init(&decoded_full[stage], 32 * kDecoderSetWarps);  // every lane of the set that wrote it
      mbarrier_init(&decoded_empty[stage], kConsumerThreads);
    }
    fence_barrier_init();
  }
  fill_scale_table(scale_table, threadIdx.x, kDecoderThreads);
  cluster.sync();  // every barrier of the cluster is initialised before any CTA arrives on it

  if (warp == kProducerWarp) {
    if (lane == 0) {
      const std::uint8_t* records =
          static_cast<const std::uint8_t*>(args.records) + (std::int64_t(blockIdx.x) * args.chunks + chunk_begin) * kRecordBytes;
      const std::uint8_t* packed = static_cast<const std::uint8_t*>(args.packed_activations) + std::int64_t(chunk_begin) * kChunkBytes;
      const auto copy_weights = [&](int chunk) {
        const int stage = chunk % kWeightStages;
        mbarrier_arrive_expect_bytes(&weight_full[stage], kRecordBytes);
        bulk_copy_to_shared(shared + stage * kRecordBytes, records + std::int64_t(chunk) * kRecordBytes, kRecordBytes, &weight_full[stage]);
      };
      // The first ring's weights go out before the wait for the kernel that packed the
      // activations (programmatic_launch.cuh): they are all this CTA can fetch meanwhile.
      const int early = min(chunk_count, kWeightStages);
      for (int chunk = 0; chunk < early; ++chunk) copy_weights(chunk);
      wait_for_prior_grids();
      for (int chunk = 0; chunk < chunk_count; ++chunk) {
        if (chunk >= early) {
          mbarrier_wait(&weight_empty[chunk % kWeightStages], unsigned(chunk / kWeightStages + 1) & 1);  // decoded: free
          copy_weights(chunk);
        }
        const int stage = chunk % kActivationStages;
        if (chunk >= kActivationStages) mbarrier_wait(&activation_empty[stage], unsigned(chunk / kActivationStages + 1) & 1);
        mbarrier_arrive_expect_bytes(&activation_full[stage], kChunkBytes);
        bulk_copy_to_shared(activations + stage * kChunkBytes, packed + std::int64_t(chunk) * kChunkBytes, kChunkBytes,
                            &activation_full[stage]);
      }
    }
  } else if (warp >= kConsumerWarps) {
    // Decoder set `set` takes chunks set, set + kDecoderSets, ...; warp `tile` of it the rows
    // [16 tile, 16 tile + 16) of each. Lane (g, t)'s fragment register j of a block holds row
    // g + 8 (j % 2), k-slots 2t + 8 (j / 2) + {0, 1} (decode_device.cuh).
    const int set = (warp - kConsumerWarps) / kDecoderSetWarps, tile = (warp - kConsumerWarps) % kDecoderSetWarps;
    const int g = lane / 4, t = lane % 4;
    for (int chunk = set; chunk < chunk_count; chunk += kDecoderSets) {
      const int stage = chunk % kWeightStages, slot = chunk % kDecodedStages;
      mbarrier_wait(&weight_full[stage], unsigned(chunk / kWeightStages) & 1);
      std::uint32_t fragments[kBlocksPerChunk][4];
      decode_stage_tile(shared + stage * kRecordBytes, kRecordCodeBytes, tile, lane, scale_table, fragments);
      mbarrier_arrive(&weight_empty[stage]);
      mbarrier_wait(&decoded_empty[slot], unsigned(chunk / kDecodedStages + 1) & 1);  // the wgmmas have read its last fill
      std::uint8_t* image = decoded + slot * DecoderLayout::kDecodedBytes;
#pragma unroll
      for (int block = 0; block < kBlocksPerChunk; ++block) {
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          *reinterpret_cast<std::uint32_t*>(image + decoded_offset(kTileRows * tile + g + 8 * (j % 2), 2 * t + 8 * (j / 2), block)) =
              fragments[block][j];
        }
      }
      fence_proxy_async_shared();  // the wgmmas read the image through the async proxy
      mbarrier_arrive(&decoded_full[slot]);
    }
  }

  float accumulators[kAccumulators];
  if (warp < kConsumerWarps) {
#pragma unroll
    for (int i = 0; i < kAccumulators; ++i) accumulators[i] = 0.0f;
    // Warpgroup warp / 4 multiplies rows [64 (warp / 4), + 64) of each decoded stage.
    const std::uint32_t decoded_address = shared_address(decoded) + (warp / 4) * 8 * kCoreMatrixNStep;
    const std::uint32_t activation_address = shared_address(activations);
    int previous = -1;  // the chunk whose wgmmas may still be reading its stages
    for (int chunk = 0; chunk < chunk_count; ++chunk) {
      const int stage = chunk % kActivationStages, slot = chunk % kDecodedStages;
      mbarrier_wait(&activation_full[stage], unsigned(chunk / kActivationStages) & 1);
      mbarrier_wait(&decoded_full[slot], unsigned(chunk / kDecodedStages) & 1);
#pragma unroll
      for (int i = 0; i < kAccumulators; ++i) pin_register(accumulators[i]);
      wgmma_fence();
#pragma unroll
      for (int block = 0; block < kBlocksPerChunk; ++block) {
        const std::uint64_t a = shared_matrix_descriptor(
            decoded_address + slot * DecoderLayout::kDecodedBytes + block * DecoderLayout::kDecodedBlockBytes, kCoreMatrixKStep,
            kCoreMatrixNStep);
        const std::uint64_t b = shared_matrix_descriptor(
            activation_address + stage * kChunkBytes + block * std::uint32_t(packed_block_bytes(kTokens)), kCoreMatrixKStep,
            kCoreMatrixNStep);
        wgmma_k16_ss<kTokens>(accumulators, a, b);
      }
      wgmma_commit();
      wgmma_wait<1>();  // the previous chunk's wgmmas have read its stages
#pragma unroll
      for (int i = 0; i < kAccumulators; ++i) pin_register(accumulators[i]);
      if (previous >= 0) {
        mbarrier_arrive(&decoded_empty[previous % kDecodedStages]);
        mbarrier_arrive(&activation_empty[previous % kActivationStages]);
      }
      previous = chunk;
    }
    wgmma_wait<0>();
#pragma unroll
    for (int i = 0; i < kAccumulators; ++i) pin_register(accumulators[i]);
    if (previous >= 0) {
      mbarrier_arrive(&decoded_empty[previous % kDecodedStages]);
      mbarrier_arrive(&activation_empty[previous % kActivationStages]);
    }
    // Only the epilogue is left: the next kernel on the stream may be scheduled now.
    allow_dependent_launch();
  }
  wait_for_prior_grids();  // before any output store below
  __syncthreads();         // every stage has been read and written: the partial tile may reuse the decoded ring

  float* partial = reinterpret_cast<float*>(decoded);
  if (warp < kConsumerWarps) {
    // Accumulators (wgmma D, per warp 16 rows): [4j + 0, 1] are row g, tokens 8j + 2t + {0, 1};
    // [4j + 2, 3] the same tokens of row g + 8.
    const int row = warp * kTileRows + lane / 4;
#pragma unroll
    for (int j = 0; j < kTokens / 8; ++j) {
      const int col = 8 * j + 2 * (lane % 4);
      partial[row * kStride + col] = accumulators[4 * j];
      partial[row * kStride + col + 1] = accumulators[4 * j + 1];
      partial[(row + 8) * kStride + col] = accumulators[4 * j + 2];
      partial[(row + 8) * kStride + col + 1] = accumulators[4 * j + 3];
    }
  }
  cluster.sync();  // every CTA's partial tile is complete

  // This CTA writes rows [row_begin, row_begin + slice_rows) of the row block, summing the
  // cluster's partials in rank order (deterministic).
  const int slice_rows = kRows / splits, row_begin = slice_rows * split;
  const auto sum_of = [&](int row, int token) {
    const int offset = (row_begin + row) * kStride + token;
    if (splits == 1) return partial[offset];
    float sum = 0.0f;
    for (int member = 0; member < splits; ++member) sum += cluster.map_shared_rank(partial, unsigned(member))[offset];
    return sum;
  };
  store_row_slice<kDecoderThreads>(args, slice_rows * min(args.m, kTokens), slice_rows, std::int64_t(blockIdx.x) * kRows + row_begin,
                                   args.alpha * kDecodeCompensation, sum_of);
  cluster.sync();  // keeps this CTA's shared memory alive until the cluster has read it
#else
  __trap();  // the host launches this kernel on SM 9.0 only, where the sm_90a build runs
#endif
}

template <int kTokens>
cudaError_t launch(const WgmmaGemmArgs& args, int splits, bool programmatic, cudaStream_t stream) {
  constexpr DecoderLayout kLayout{kTokens};
  const auto kernel = decoder_gemm_kernel<kTokens>;
  const cudaError_t configured = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kLayout.bytes());
  if (configured != cudaSuccess) return configured;
  const std::int64_t row_blocks = (std::int64_t(args.n) + DecoderLayout::kRows - 1) / DecoderLayout::kRows;
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(unsigned(row_blocks), unsigned(splits));
  config.blockDim = dim3(kDecoderThreads);
  config.dynamicSmemBytes = kLayout.bytes();
  config.stream = stream;
  cudaLaunchAttribute attributes[2];
  attributes[0].id = cudaLaunchAttributeClusterDimension;
  attributes[0].val.clusterDim.x = 1;
  attributes[0].val.clusterDim.y = unsigned(splits);
  attributes[0].val.clusterDim.z = 1;
  attributes[1] = programmatic_launch_attribute(programmatic);
  config.attrs = attributes;
  config.numAttrs = 2;
  return cudaLaunchKernelEx(&config, kernel, args);
}

}  // namespace

cudaError_t launch_decoder_gemm(const WgmmaGemmArgs& args, const DecoderShape& shape, bool programmatic, cudaStream_t stream) {
  if (!is_compiled_decoder_shape(shape)) return cudaErrorInvalidConfiguration;
  return shape.tokens == 32 ? launch<32>(args, shape.splits, programmatic, stream) : launch<64>(args, shape.splits, programmatic, stream);
}

bool is_compiled_decoder_shape(const DecoderShape& shape) {
  const bool power_of_two = shape.splits >= 1 && (shape.splits & (shape.splits - 1)) == 0;
  return (shape.tokens == 32 || shape.tokens == 64) && power_of_two && shape.splits <= kMaxWgmmaCluster;
}

}  // namespace fp4gemm::cuda_decode
