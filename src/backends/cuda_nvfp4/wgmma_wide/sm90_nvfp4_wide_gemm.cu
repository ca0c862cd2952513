// NVFP4 x BF16 GEMM for large M on Hopper without a BF16 copy of the weight: the small-M wgmma
// kernel's operands (sm90_nvfp4_wgmma_gemm.cu) at prefill width. out^T = W * A^T: 128 weight rows
// per CTA are decoded in registers as wgmma's A (two consumer warpgroups of 64 rows), 256 (or
// 128) activation rows are its B in shared memory, so one wgmma.m64n256k16 multiplies each decoded
// fragment with 256 rows: the decode (~60 instructions a warp per chunk) hides under the 512
// tensor cycles its warpgroup's four wgmmas take.
//
// A CTA is two consumer warpgroups and two producer warps. Per chunk (64 columns of K) the weight
// warp bulk-copies the CTA's weight record (4.5 KiB) and the activation warp the chunk's packed
// activations (32 KiB at 256 rows) into one stage of a ring; full/empty mbarriers order the stages.
// Each consumer warp decodes its 16-row tile of the chunk into four A fragments while the
// previous chunk's wgmmas run, then issues the next four. One output tile per CTA (no K split, no
// cluster): the tiles are many at the M this kernel serves. The epilogue stores from registers.
#include "backends/cuda_common/dynamic_shared_limit.hpp"
#include "backends/cuda_common/launch_registers.hpp"
#include "backends/cuda_common/programmatic_launch.cuh"
#include "backends/cuda_nvfp4/sm90_async_ops.cuh"
#include "backends/cuda_nvfp4/sm90_wgmma_chunk.cuh"
#include "backends/cuda_nvfp4/weight_decode.cuh"
#include "backends/cuda_nvfp4/wgmma_small_m/sm90_nvfp4_wgmma_tuning.hpp"
#include "backends/cuda_nvfp4/wgmma_wide/sm90_nvfp4_wide_gemm.cuh"

namespace fp4gemm::cuda_nvfp4 {
namespace {

constexpr int kWideConsumerWarps = 8;
// The two consumer warpgroups, then a producer warpgroup whose first two warps copy the weights and
// the activations. Registers: 384 threads get 168 each at launch (the most for 65536); the
// producers give all but kWideProducerRegisters back (setmaxnreg) and the consumers take them for
// 128 accumulators at 256 rows (at 168 ptxas spilled ~500 bytes and serialized the wgmmas). What the
// producers free must cover what the consumers take, or the consumers' setmaxnreg waits forever.
constexpr int kWideThreads = 32 * (kWideConsumerWarps + 4);
constexpr int kWideLaunchRegisters = 65536 / kWideThreads / 8 * 8;
constexpr int kWideProducerRegisters = 40;
constexpr int kWideConsumerRegisters = 232;
static_assert(2 * (kWideConsumerRegisters - kWideLaunchRegisters) <= kWideLaunchRegisters - kWideProducerRegisters,
              "the consumers take no more registers than the producer warpgroup gives back");

// Dynamic shared memory: the stage ring, the scale table, the full and empty mbarriers.
template <int kTokens>
struct WideSharedLayout {
  static constexpr int kRecordOffset = 0;
  static constexpr int kActivationOffset = kRecordBytes;  // after the weight record (codes, then scales)
  static constexpr int kActivationBytes = int(packed_chunk_bytes(kTokens));
  static constexpr int kStageBytes = kActivationOffset + kActivationBytes;
  static constexpr int kReserved = 256 * 4 + 2 * kWideMaxStages * 8;
  static constexpr int kFitStages = int((kSm90SharedBytesPerBlock - kReserved) / kStageBytes);
  // An even count: the consumers' two fragment sets alternate by stage parity.
  static constexpr int kStages = (kFitStages < kWideMaxStages ? kFitStages : kWideMaxStages) / 2 * 2;
  static constexpr int kTableOffset = kStages * kStageBytes;
  static constexpr int kBarrierOffset = kTableOffset + 256 * 4;
  static constexpr int kBytes = kBarrierOffset + 2 * kStages * 8;
  static_assert(kActivationOffset % 128 == 0 && kStageBytes % 128 == 0, "stages and operands stay 128-byte aligned");
  static_assert(kStages >= 2 && kBytes <= kSm90SharedBytesPerBlock, "at least two stages fit one CTA");
};

// The output tile of CTA `cta`: groups of kWideRasterTokenBlocks activation-row blocks, each
// group's tiles weight block by weight block (neighbouring CTAs share the weight block's record
// stream and the group's activations in L2).
struct WideTile {
  int token_block = 0, row_block = 0;
};
__device__ __forceinline__ WideTile wide_tile(int cta, int token_blocks, int row_blocks) {
  const int group = cta / (kWideRasterTokenBlocks * row_blocks);
  const int first = group * kWideRasterTokenBlocks;
  const int in_group = min(kWideRasterTokenBlocks, token_blocks - first);
  const int local = cta - group * kWideRasterTokenBlocks * row_blocks;
  return WideTile{first + local % in_group, local / in_group};
}

// A persistent grid (args.ctas CTAs, one per SM): CTA c takes tiles c, c + ctas, ... Each tile starts
// at stage 0 of the ring, so every stage index stays a compile-time constant of the unrolled ring
// (computing them per chunk cost more than the persistence saved: docs/kernels/wgmma-wide.md); the
// stages a tile's last round leaves unused are skipped, and each side keeps a parity bit per stage
// across tiles. The producers fill the next tile's first stages while the consumers finish and
// store the current one. Out: the output element type (one epilogue per kernel: three inlined
// behind a switch left ptxas short of registers in the tile loop).
template <int kTokens, class Out>
__global__ void __launch_bounds__(kWideThreads, 1) wide_gemm_kernel(const WideGemmArgs args) {
#if FP4GEMM_SM90A_DEVICE
  using Layout = WideSharedLayout<kTokens>;
  constexpr int kStages = Layout::kStages;
  constexpr int kAccumulators = kTokens / 2;
  constexpr int kWeightWarp = kWideConsumerWarps, kActivationWarp = kWideConsumerWarps + 1;

  extern __shared__ __align__(128) std::uint8_t shared[];
  std::uint32_t* scale_table = reinterpret_cast<std::uint32_t*>(shared + Layout::kTableOffset);
  std::uint64_t* full = reinterpret_cast<std::uint64_t*>(shared + Layout::kBarrierOffset);
  std::uint64_t* empty = full + kStages;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int chunks = args.chunks;
  const int token_blocks = (args.m + kTokens - 1) / kTokens;
  const int row_blocks = (args.n + kWideCtaRows - 1) / kWideCtaRows;
  const int tiles = token_blocks * row_blocks;

  if (threadIdx.x == 0) {
    for (int stage = 0; stage < kStages; ++stage) {
      mbarrier_init(&full[stage], 2);                           // the two producers' expect-bytes arrivals
      mbarrier_init(&empty[stage], 32 * kWideConsumerWarps);  // every consumer lane
    }
    fence_barrier_init();
  }
  fill_scale_table(scale_table, threadIdx.x, kWideThreads);
  __syncthreads();

  if (warp >= kWideConsumerWarps) {
    // Producers: lane 0 of each streams its operand through the ring, one bulk copy per stage.
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(kWideProducerRegisters));
    if (lane != 0 || warp > kActivationWarp) return;
    const std::uint32_t stages_address = shared_address(shared);
    const std::uint32_t full_address = shared_address(full), empty_address = shared_address(empty);
    const bool weights = warp == kWeightWarp;
    // The weights depend on nothing the previous kernel writes: no wait for it.
    if (!weights) wait_for_prior_grids();  // the packed activations are the previous kernel's output
    const int bytes = weights ? kRecordBytes : Layout::kActivationBytes;
    const int offset = weights ? Layout::kRecordOffset : Layout::kActivationOffset;
    unsigned parity = 0;  // bit s: parity of stage s's next fill
    for (int t = int(blockIdx.x); t < tiles; t += int(gridDim.x)) {
      const WideTile tile = wide_tile(t, token_blocks, row_blocks);
      const std::uint8_t* source =
          weights ? static_cast<const std::uint8_t*>(args.records) + record_offset(std::int64_t(tile.row_block) * kTilesPerBlock, 0, chunks)
                  : static_cast<const std::uint8_t*>(args.packed_activations) +
                        (std::int64_t(tile.token_block) * chunks) * Layout::kActivationBytes;
      for (int base = 0; base < chunks; base += kStages) {
#pragma unroll
        for (int stage = 0; stage < kStages; ++stage) {
          if (base + stage < chunks) {
            mbarrier_wait(empty_address + 8 * stage, ((parity >> stage) & 1) ^ 1);
            parity ^= 1u << stage;
            mbarrier_arrive_expect_bytes(full_address + 8 * stage, unsigned(bytes));
            bulk_copy_to_shared(stages_address + stage * Layout::kStageBytes + offset, source, unsigned(bytes), full_address + 8 * stage);
            source += bytes;
          }
        }
      }
    }
    return;
  }

  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(kWideConsumerRegisters));
  // Consumers.
  const std::uint32_t stages = shared_address(shared);
  ConsumerAddresses at{stages + Layout::kRecordOffset + warp * kTileCodeBytes + lane * 16,
                       stages + Layout::kRecordOffset + kRecordCodeBytes + warp * kTileScaleBytes + lane * 2,
                       shared_address(scale_table),
                       shared_address(full),
                       shared_address(empty),
                       activation_descriptor(stages + Layout::kActivationOffset)};
  float accumulators[kAccumulators];
  // Two fragment sets: chunk c's wgmmas read one while chunk c + 1 is decoded into the other; a set
  // is rewritten only after wgmma_wait<1> retired the group that read it.
  std::uint32_t fragments[2][kBlocksPerChunk][4];
  unsigned parity = 0;
  const auto wait_full = [&](int stage) {
    mbarrier_wait(at.full + 8 * stage, (parity >> stage) & 1);
    parity ^= 1u << stage;
  };
  const auto decode_chunk = [&](int stage, std::uint32_t(&set)[kBlocksPerChunk][4]) {
    decode_tile_at(at.code + stage * Layout::kStageBytes, at.scale + stage * Layout::kStageBytes, at.table, set);
  };
  const auto step = [&](int chunk, int stage, std::uint32_t(&current)[kBlocksPerChunk][4], std::uint32_t(&following)[kBlocksPerChunk][4]) {
    at.pin();
    // Retires the previous chunk's group: its stage and fragment set are free again.
    issue_chunk_and_retire_older<kTokens, 1>(accumulators, current, at.first_descriptor + std::uint32_t(stage * Layout::kStageBytes >> 4));
    if (chunk >= 1) mbarrier_arrive(at.empty + 8 * ((stage + kStages - 1) % kStages));
    if (chunk + 1 < chunks) {
      const int next = stage + 1 == kStages ? 0 : stage + 1;
      wait_full(next);
      decode_chunk(next, following);
    }
  };
  wait_for_prior_grids();  // before the first output store (the previous kernel may read out)
  for (int t = int(blockIdx.x); t < tiles; t += int(gridDim.x)) {
    const WideTile tile = wide_tile(t, token_blocks, row_blocks);
#pragma unroll
    for (int i = 0; i < kAccumulators; ++i) accumulators[i] = 0.0f;
    wait_full(0);
    decode_chunk(0, fragments[0]);
    for (int base = 0; base < chunks; base += kStages) {
#pragma unroll
      for (int stage = 0; stage < kStages; ++stage) {
        if (base + stage < chunks) step(base + stage, stage, fragments[stage % 2], fragments[(stage + 1) % 2]);
      }
    }
    wgmma_wait<0>();
#pragma unroll
    for (int i = 0; i < kAccumulators; ++i) pin_register(accumulators[i]);
    mbarrier_arrive(at.empty + 8 * ((chunks - 1) % kStages));  // the tile's last stage, for the next tile
    if (t + int(gridDim.x) >= tiles) allow_dependent_launch();  // only the last epilogue is left
    KernelProblem block = args;  // this tile's rows of the output
    const std::int64_t first_token = std::int64_t(tile.token_block) * kTokens;
    block.out = static_cast<Out*>(args.out) + first_token * args.out_stride;
    block.m = int(args.m - first_token);
    const std::int64_t row = std::int64_t(tile.row_block) * kWideCtaRows + warp * kTileRows + lane / 4;
    store_accumulator_quads_as<Out, kTokens>(block, accumulators, row, args.alpha * kDecodeCompensation, [](int) { return true; });
  }
#else
  __trap();  // the host launches this kernel on SM 9.0 only, where the sm_90a build runs
#endif
}

template <int kTokens, class Out>
cudaError_t launch(const WideGemmArgs& args, bool programmatic, cudaStream_t stream) {
  using Layout = WideSharedLayout<kTokens>;
  const auto kernel = wide_gemm_kernel<kTokens, Out>;
  if (const cudaError_t raised = fp4gemm::cuda::raise_dynamic_shared_limit(reinterpret_cast<const void*>(kernel), Layout::kBytes);
      raised != cudaSuccess) {
    return raised;
  }
  static const cudaError_t registers_checked = fp4gemm::cuda::expect_launch_registers(kernel, kWideLaunchRegisters);
  if (registers_checked != cudaSuccess) return registers_checked;
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(unsigned(args.ctas));
  config.blockDim = dim3(kWideThreads);
  config.dynamicSmemBytes = Layout::kBytes;
  config.stream = stream;
  cudaLaunchAttribute attribute = programmatic_launch_attribute(programmatic);
  config.attrs = &attribute;
  config.numAttrs = 1;
  return cudaLaunchKernelEx(&config, kernel, args);
}

}  // namespace

cudaError_t launch_wide_gemm(const WideGemmArgs& args, bool programmatic, cudaStream_t stream) {
  if (args.m <= 0 || args.n <= 0 || args.chunks <= 0 || args.packed_activations == nullptr || (args.tokens != 128 && args.tokens != 256) ||
      args.ctas < 1 || args.ctas > wide_tiles(args.m, args.n, args.tokens)) {
    return cudaErrorInvalidValue;
  }
  const bool narrow = args.tokens == 128;
  switch (args.out_dtype) {
    case DType::f32: return narrow ? launch<128, float>(args, programmatic, stream) : launch<256, float>(args, programmatic, stream);
    case DType::bf16:
      return narrow ? launch<128, __nv_bfloat16>(args, programmatic, stream) : launch<256, __nv_bfloat16>(args, programmatic, stream);
    case DType::f16: return narrow ? launch<128, __half>(args, programmatic, stream) : launch<256, __half>(args, programmatic, stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace fp4gemm::cuda_nvfp4
