// cuda_moe's wide expert kernel (SM 9.0): the routed experts of a prefill on wgmma.m64nNk16, the
// NVFP4 weights read from the stacked layout that the other expert kernels read (no second copy;
// codes in fragment order, cuda_moe_code_order.hpp) and decoded in registers as the MMA's A,
// N = 32, 64 or 128 entries of one expert as its B (wide_block_entries picks N from the entries an
// expert is expected to get).
//
// Per call: (1) one block lists the token blocks, up to N consecutive entries of one
// active expert each; (2) x's rows of each block's entries are gathered and packed into the image
// the MMA's shared-memory B reads (the cuda_nvfp4 packing, activation_pack_layout.hpp, with the
// pair order of cuda_moe_code_order.hpp); (3) gate_up: a CTA per (64 outputs, token block), its
// first consumer warpgroup on the 64 gate rows and its second on the 64 up rows beside them, which
// it hands over through shared memory for SiLU·mul; h in BF16; (4) h packed the same way; (5) down:
// a CTA per (128 rows, token block), y in FP32.
//
// A CTA of the GEMM is two consumer warpgroups and a producer warpgroup: its first warp copies the
// weight rows of each 64-column chunk with cp.async (the 128 rows are scattered over the stack:
// 32 bytes of codes and 4 of scales each), its second bulk-copies the chunk's packed entries
// (16 KiB), into one stage of a ring whose full/empty mbarriers order the stages. Each consumer
// warp decodes its 16-row tile of a chunk while the previous chunk's wgmmas run, as in cuda_nvfp4's
// wide prefill kernel (sm90_nvfp4_wide_gemm.cu), whose chunk step it shares.
#include <cub/block/block_scan.cuh>

#include "backends/cuda_common/bf16_mma_decode.cuh"
#include "backends/cuda_common/cuda_check.hpp"
#include "backends/cuda_common/dynamic_shared_limit.hpp"
#include "backends/cuda_nvfp4/activation_pack_layout.hpp"
#include "backends/cuda_nvfp4/sm90_async_ops.cuh"
#include "backends/cuda_nvfp4/sm90_wgmma_chunk.cuh"
#include "fp4gemm/error.hpp"
#include "moe/cuda_moe/cuda_moe_grouping.cuh"
#include "moe/cuda_moe/cuda_moe_code_order.hpp"
#include "moe/cuda_moe/cuda_moe_shape.hpp"
#include "moe/cuda_moe/wide/cuda_moe_wide.hpp"

namespace fp4gemm::moe::cuda_moe {
namespace {

using namespace fp4gemm::cuda_nvfp4;  // the SM 9.0 asynchronous operations and the wgmma chunk step

constexpr int kChunk = 64;  // columns of K per stage
constexpr int kCodeRowBytes = kChunk / 2, kScaleRowBytes = kChunk / 16;
constexpr int kConsumerWarps = 8;
constexpr int kThreads = 32 * (kConsumerWarps + 4);  // two consumer warpgroups, a producer warpgroup
constexpr int kWeightWarp = kConsumerWarps, kEntryWarp = kConsumerWarps + 1;

// A token block of kEntries (wgmma's N: 32, 64 or 128): one chunk of its packed entries, and one
// MMA block (16 k-slots) of that (cuda_nvfp4's packing, activation_pack_layout.hpp).
template <int kEntries>
constexpr int packed_chunk_bytes_of() { return kEntries * kChunk * 2; }
template <int kEntries>
constexpr int packed_block_bytes_of() { return int(packed_block_bytes(kEntries)); }

// Shared memory: the stage ring (weight codes, their scales, the packed entries), the E4M3 scale
// table, the full and empty mbarriers. Eight stages: ~164 KiB at 128 entries.
template <int kEntries>
struct WideLayout {
  static constexpr int kCodeOffset = 0;
  static constexpr int kScaleOffset = kWideRows * kCodeRowBytes;                // 4096
  static constexpr int kEntryOffset = kScaleOffset + kWideRows * kScaleRowBytes;  // 4608
  static constexpr int kStageBytes = kEntryOffset + packed_chunk_bytes_of<kEntries>();
  static constexpr int kStages = 8;  // even: the consumers' two fragment sets alternate by stage parity
  static constexpr int kTableOffset = kStages * kStageBytes;
  static constexpr int kBarrierOffset = kTableOffset + 256 * 4;
  static constexpr int kBytes = kBarrierOffset + 2 * kStages * 8;
  static_assert(kEntryOffset % 128 == 0 && kStageBytes % 128 == 0, "stages and operands stay 128-byte aligned");
  static_assert(kBytes <= 227 * 1024, "the ring fits one CTA");
  static_assert(kStages * kStageBytes >= kEntries / 2 * 128 * 4, "the up rows' hand-over fits the idle ring");
};

// The token blocks of kEntries: table[0 .. count) = {expert, first entry, end entry, 0}, count in table[max].x.
template <int kEntries>
__global__ void __launch_bounds__(kScanThreads) wide_blocks_kernel(Grouping grouping, int max_slots, int4* table, int max_blocks) {
  using Scan = cub::BlockScan<int, kScanThreads>;
  __shared__ typename Scan::TempStorage scan;
  const int active = *grouping.active_count;
  const int per_thread = (max_slots + kScanThreads - 1) / kScanThreads;
  const int first_slot = int(threadIdx.x) * per_thread;
  int blocks = 0;
  for (int s = first_slot; s < min(first_slot + per_thread, active); ++s) {
    const int expert = grouping.active[s];
    blocks += (grouping.offsets[expert + 1] - grouping.offsets[expert] + kEntries - 1) / kEntries;
  }
  int next = 0, total = 0;
  Scan(scan).ExclusiveSum(blocks, next, total);
  for (int s = first_slot; s < min(first_slot + per_thread, active); ++s) {
    const int expert = grouping.active[s];
    const int begin = grouping.offsets[expert], end = grouping.offsets[expert + 1];
    for (int first = begin; first < end && next < max_blocks; first += kEntries) {
      table[next++] = make_int4(expert, first, min(end, first + kEntries), 0);
    }
  }
  if (threadIdx.x == 0) table[max_blocks] = make_int4(min(total, max_blocks), 0, 0, 0);
}

// Entry i of token block blockIdx.y, chunk blockIdx.x: its 64 BF16 (row entry_token[entry] of
// `input`, or row `entry` when entry_token is null; zeros past the block's end) to the packed image,
// block b's core-matrix row of k-half `high` holding the column pairs cuda_moe_code_order.hpp says.
template <int kEntries>
__global__ void __launch_bounds__(kEntries) wide_pack_kernel(const __nv_bfloat16* __restrict__ input, std::int64_t stride,
                                                                 const std::int32_t* __restrict__ entry_token, const int4* table,
                                                                 int max_blocks, int chunks, std::uint8_t* __restrict__ packed) {
  if (int(blockIdx.y) >= table[max_blocks].x) return;
  const int4 block = table[blockIdx.y];
  const int i = int(threadIdx.x), entry = block.y + i;
  std::uint32_t words[kChunk / 2];
  if (entry < block.z) {
    const std::int64_t row = entry_token != nullptr ? entry_token[entry] : entry;
    const uint4* source = reinterpret_cast<const uint4*>(input + row * stride + std::int64_t(blockIdx.x) * kChunk);
#pragma unroll
    for (int q = 0; q < kChunk / 8; ++q) {
      const uint4 v = __ldg(source + q);
      words[4 * q] = v.x, words[4 * q + 1] = v.y, words[4 * q + 2] = v.z, words[4 * q + 3] = v.w;
    }
  } else {
#pragma unroll
    for (int w = 0; w < kChunk / 2; ++w) words[w] = 0;
  }
  std::uint8_t* out =
      packed + (std::int64_t(blockIdx.y) * chunks + blockIdx.x) * packed_chunk_bytes_of<kEntries>() + (i / 8) * kCoreMatrixNStep + (i % 8) * 16;
#pragma unroll
  for (int b = 0; b < 4; ++b) {
#pragma unroll
    for (int high = 0; high < 2; ++high) {
      // Slots 2t, 2t + 1 of this half: columns c and c + 4, c = 16t + 8(b/2) + 2(b%2) + high, which
      // are the `high` halves of words c / 2 and c / 2 + 2.
      std::uint32_t row[4];
#pragma unroll
      for (int t = 0; t < 4; ++t) {
        const int w = 8 * t + 4 * (b / 2) + b % 2;
        row[t] = __byte_perm(words[w], words[w + 2], high ? 0x7632 : 0x5410);
      }
      *reinterpret_cast<uint4*>(out + b * packed_block_bytes_of<kEntries>() + high * kCoreMatrixKStep) =
          make_uint4(row[0], row[1], row[2], row[3]);
    }
  }
}

// kGateUp: h (BF16) = SiLU(gs·gate)·(us·up) for 64 outputs; else y (FP32) = ds·(h·downᵀ) for 128
// rows. Block (x, y): row block x of token block y's expert.
template <bool kGateUp, int kEntries>
__global__ void __launch_bounds__(kThreads, 1)
wide_expert_kernel(StackedExperts weights, const int4* table, int max_blocks, const std::uint8_t* __restrict__ packed, void* out) {
#if FP4GEMM_SM90A_DEVICE
  using Layout = WideLayout<kEntries>;
  constexpr int kStages = Layout::kStages;
  constexpr int kAccumulators = kEntries / 2;
  constexpr int kPackedChunkBytes = packed_chunk_bytes_of<kEntries>();
  if (int(blockIdx.y) >= table[max_blocks].x) return;
  const int4 block = table[blockIdx.y];
  const int expert = block.x, first_entry = block.y, end_entry = block.z;
  const int chunks = int(weights.cols / kChunk);
  const std::int64_t out_rows = kGateUp ? weights.rows / 2 : weights.rows;
  const std::int64_t first_out = std::int64_t(blockIdx.x) * (kGateUp ? kWideRows / 2 : kWideRows);

  extern __shared__ __align__(128) std::uint8_t shared[];
  std::uint32_t* scale_table = reinterpret_cast<std::uint32_t*>(shared + Layout::kTableOffset);
  std::uint64_t* full = reinterpret_cast<std::uint64_t*>(shared + Layout::kBarrierOffset);
  std::uint64_t* empty = full + kStages;
  const int warp = int(threadIdx.x) / 32, lane = int(threadIdx.x) % 32;
  if (threadIdx.x == 0) {
    for (int stage = 0; stage < kStages; ++stage) {
      mbarrier_init(&full[stage], 32 + 1);                 // the weight warp's lanes, the entry warp's expect-bytes
      mbarrier_init(&empty[stage], 32 * kConsumerWarps);  // every consumer lane
    }
    fence_barrier_init();
  }
  cuda::fill_scale_table(scale_table, int(threadIdx.x), kThreads);
  __syncthreads();
  const std::uint32_t stages = shared_address(shared);
  const std::uint32_t full_address = shared_address(full), empty_address = shared_address(empty);

  if (warp >= kConsumerWarps) {
    if (warp > kEntryWarp || (warp == kEntryWarp && lane != 0)) return;
    const bool weight_warp = warp == kWeightWarp;
    // The weight warp: lane L copies CTA rows L, L + 32, L + 64, L + 96. gate_up's rows 0-63 are
    // gate rows, 64-127 the up rows of the same outputs; rows past the expert read its last row
    // (their sums are never stored).
    const std::uint8_t* code_rows[4];
    const std::uint8_t* scale_rows[4];
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      const int r = lane + 32 * q;
      const std::int64_t local = kGateUp ? (r < 64 ? 0 : out_rows) + min(first_out + r % 64, out_rows - 1) : min(first_out + r, out_rows - 1);
      const std::int64_t row = std::int64_t(expert) * weights.rows + local;
      code_rows[q] = weights.codes + row * (weights.cols / 2);
      scale_rows[q] = weights.scales + row * (weights.cols / 16);
    }
    const std::uint8_t* entries = packed + std::int64_t(blockIdx.y) * chunks * kPackedChunkBytes;
    unsigned parity = 0;  // bit s: parity of stage s's next fill
    for (int base = 0; base < chunks; base += kStages) {
#pragma unroll
      for (int stage = 0; stage < kStages; ++stage) {
        const int chunk = base + stage;
        if (chunk >= chunks) continue;
        mbarrier_wait(empty_address + 8 * stage, ((parity >> stage) & 1) ^ 1);
        parity ^= 1u << stage;
        const std::uint32_t at = stages + stage * Layout::kStageBytes;
        if (weight_warp) {
#pragma unroll
          for (int q = 0; q < 4; ++q) {
            const int r = lane + 32 * q;
            const std::uint8_t* codes = code_rows[q] + chunk * kCodeRowBytes;
            copy_async_16(at + Layout::kCodeOffset + r * kCodeRowBytes, codes);
            copy_async_16(at + Layout::kCodeOffset + r * kCodeRowBytes + 16, codes + 16);
            copy_async_4(at + Layout::kScaleOffset + r * kScaleRowBytes, scale_rows[q] + chunk * kScaleRowBytes);
          }
          mbarrier_arrive_on_copies(full_address + 8 * stage);
        } else {
          mbarrier_arrive_expect_bytes(full_address + 8 * stage, unsigned(kPackedChunkBytes));
          bulk_copy_to_shared(at + Layout::kEntryOffset, entries + std::int64_t(chunk) * kPackedChunkBytes, unsigned(kPackedChunkBytes),
                              full_address + 8 * stage);
        }
      }
    }
    return;
  }

  // Consumers: warp w decodes CTA rows 16w .. 16w + 15 (lane: rows g and g + 8, chunk columns
  // 16t .. 16t + 15 and their scale).
  const int g = lane / 4, t = lane % 4;
  const std::uint32_t code_at = stages + Layout::kCodeOffset + (16 * warp + g) * kCodeRowBytes + 8 * t;
  const std::uint32_t scale_at = stages + Layout::kScaleOffset + (16 * warp + g) * kScaleRowBytes + t;
  const std::uint32_t table_at = shared_address(scale_table);
  const std::uint32_t first_descriptor = activation_descriptor(stages + Layout::kEntryOffset);
  float accumulators[kAccumulators];
#pragma unroll
  for (int i = 0; i < kAccumulators; ++i) accumulators[i] = 0.0f;
  std::uint32_t fragments[2][4][4];
  unsigned parity = 0;
  const auto wait_full = [&](int stage) {
    mbarrier_wait(full_address + 8 * stage, (parity >> stage) & 1);
    parity ^= 1u << stage;
  };
  const auto decode_chunk = [&](int stage, std::uint32_t(&set)[4][4]) {
    const std::uint32_t offset = stage * Layout::kStageBytes;
    const uint2 row_g = load_shared_8(code_at + offset), row_g8 = load_shared_8(code_at + offset + 8 * kCodeRowBytes);
    const std::uint32_t scale_g = load_shared_1(scale_at + offset), scale_g8 = load_shared_1(scale_at + offset + 8 * kScaleRowBytes);
    const std::uint32_t pair_scale_g = load_shared_4(table_at + 4 * scale_g), pair_scale_g8 = load_shared_4(table_at + 4 * scale_g8);
#pragma unroll
    for (int b = 0; b < 4; ++b) {
      const std::uint32_t word_g = b < 2 ? row_g.x : row_g.y, word_g8 = b < 2 ? row_g8.x : row_g8.y;
      const int pair = 2 * (b % 2);
      set[b][0] = cuda::bf16x2_mul(pair_bits(word_g, pair), pair_scale_g);
      set[b][1] = cuda::bf16x2_mul(pair_bits(word_g8, pair), pair_scale_g8);
      set[b][2] = cuda::bf16x2_mul(pair_bits(word_g, pair + 1), pair_scale_g);
      set[b][3] = cuda::bf16x2_mul(pair_bits(word_g8, pair + 1), pair_scale_g8);
    }
  };
  const auto step = [&](int chunk, int stage, std::uint32_t(&current)[4][4], std::uint32_t(&following)[4][4]) {
    // Retires the previous chunk's group: its stage and fragment set are free again.
    issue_chunk_and_retire_older<kEntries, 1>(accumulators, current, first_descriptor + std::uint32_t(stage * Layout::kStageBytes >> 4));
    if (chunk >= 1) mbarrier_arrive(empty_address + 8 * ((stage + kStages - 1) % kStages));
    if (chunk + 1 < chunks) {
      const int next = stage + 1 == kStages ? 0 : stage + 1;
      wait_full(next);
      decode_chunk(next, following);
    }
  };
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

  // Accumulator 4q + 2·high + h: row g + 8·high of the warp's tile, entry 8q + 2t + h of the block.
  const int consumer = int(threadIdx.x) % 128;  // the same (row, entry) positions in both warpgroups
  if constexpr (kGateUp) {
    // The up warpgroup hands its sums to the gate warpgroup through the ring, idle once both are
    // past their last wgmma (every stage was filled and consumed).
    float* handover = reinterpret_cast<float*>(shared);
    named_barrier_sync(1, 32 * kConsumerWarps);
    if (warp >= 4) {
#pragma unroll
      for (int v = 0; v < kAccumulators; ++v) handover[v * 128 + consumer] = accumulators[v];
    }
    named_barrier_sync(1, 32 * kConsumerWarps);
    if (warp >= 4) return;
    const float gate_scale = weights.global_scales[2 * expert] * cuda::kDecodeCompensation;
    const float up_scale = weights.global_scales[2 * expert + 1] * cuda::kDecodeCompensation;
    auto* h = static_cast<__nv_bfloat16*>(out);
#pragma unroll
    for (int v = 0; v < kAccumulators; ++v) {
      const int entry = first_entry + 8 * (v / 4) + 2 * t + v % 2;
      const std::int64_t feature = first_out + 16 * warp + g + 8 * (v % 4 / 2);
      if (entry >= end_entry || feature >= out_rows) continue;
      const float up = handover[v * 128 + consumer] * up_scale;
      h[std::int64_t(entry) * out_rows + feature] = __float2bfloat16_rn(silu_mul(accumulators[v] * gate_scale, up, true));
    }
  } else {
    const float scale = weights.global_scales[expert] * cuda::kDecodeCompensation;
    auto* y = static_cast<float*>(out);
#pragma unroll
    for (int v = 0; v < kAccumulators; ++v) {
      const int entry = first_entry + 8 * (v / 4) + 2 * t + v % 2;
      const std::int64_t row = first_out + 16 * warp + g + 8 * (v % 4 / 2);
      if (entry < end_entry && row < out_rows) y[std::int64_t(entry) * out_rows + row] = accumulators[v] * scale;
    }
  }
#else
  __trap();  // the host launches this kernel on SM 9.0 only, where the sm_90a build runs
#endif
}

template <bool kGateUp, int kEntries>
void launch_gemm(const StackedExperts& weights, const WideScratch& scratch, void* out, cudaStream_t stream, const char* what) {
  using Layout = WideLayout<kEntries>;
  const auto kernel = wide_expert_kernel<kGateUp, kEntries>;
  cuda::check_cuda(cuda::raise_dynamic_shared_limit(reinterpret_cast<const void*>(kernel), Layout::kBytes), what);
  const std::int64_t out_rows = kGateUp ? weights.rows / 2 : weights.rows;
  const dim3 grid(unsigned(wide_row_blocks(out_rows, kGateUp)), unsigned(scratch.max_blocks));
  kernel<<<grid, kThreads, Layout::kBytes, stream>>>(weights, static_cast<const int4*>(scratch.blocks), int(scratch.max_blocks),
                                                     static_cast<const std::uint8_t*>(scratch.packed), out);
  cuda::check_launch(what);
}

template <int kEntries>
void launch_pack(const __nv_bfloat16* input, std::int64_t stride, const std::int32_t* entry_token, std::int64_t cols,
                 const WideScratch& scratch, cudaStream_t stream, const char* what) {
  const int chunks = int(cols / kChunk);
  const dim3 grid(unsigned(chunks), unsigned(scratch.max_blocks));
  wide_pack_kernel<kEntries><<<grid, kEntries, 0, stream>>>(input, stride, entry_token, static_cast<const int4*>(scratch.blocks),
                                                      int(scratch.max_blocks), chunks, static_cast<std::uint8_t*>(scratch.packed));
  cuda::check_launch(what);
}

}  // namespace

bool wide_takes(const StackedExperts& gate_up, const StackedExperts& down, const DeviceRows& x) {
  return gate_up.dense == nullptr && down.dense == nullptr && x.bf16 && reinterpret_cast<std::uintptr_t>(x.data) % 16 == 0 &&
         x.stride % 8 == 0 && gate_up.cols % kChunk == 0 && down.cols % kChunk == 0;
}

template <int kEntries>
void launch_all(const StackedExperts& gate_up, const StackedExperts& down, const DeviceRows& x, const Grouping& grouping,
                const WideScratch& scratch, __nv_bfloat16* h, float* y, cudaStream_t stream) {
  wide_blocks_kernel<kEntries><<<1, kScanThreads, 0, stream>>>(grouping, int(grouping.expert_slots), static_cast<int4*>(scratch.blocks),
                                                                int(scratch.max_blocks));
  cuda::check_launch("cuda_moe: launching the wide kernel's token blocks");
  launch_pack<kEntries>(static_cast<const __nv_bfloat16*>(x.data), x.stride, grouping.entry_token, gate_up.cols, scratch, stream,
                        "cuda_moe: launching the wide kernel's pack of x");
  launch_gemm<true, kEntries>(gate_up, scratch, h, stream, "cuda_moe: launching the wide gate_up kernel");
  const std::int64_t intermediate = gate_up.rows / 2;
  launch_pack<kEntries>(h, intermediate, nullptr, down.cols, scratch, stream, "cuda_moe: launching the wide kernel's pack of h");
  launch_gemm<false, kEntries>(down, scratch, y, stream, "cuda_moe: launching the wide down kernel");
}

void launch_wide_experts(const StackedExperts& gate_up, const StackedExperts& down, const DeviceRows& x, const Grouping& grouping,
                         const WideScratch& scratch, __nv_bfloat16* h, float* y, cudaStream_t stream) {
  if (scratch.max_blocks == 0 || grouping.expert_slots == 0) return;
  switch (scratch.entries) {
    case 32: launch_all<32>(gate_up, down, x, grouping, scratch, h, y, stream); break;
    case 64: launch_all<64>(gate_up, down, x, grouping, scratch, h, y, stream); break;
    case 128: launch_all<128>(gate_up, down, x, grouping, scratch, h, y, stream); break;
    default: throw_invalid("cuda_moe: the wide kernel's token blocks are 32, 64 or 128 entries, not " + std::to_string(scratch.entries));
  }
}

}  // namespace fp4gemm::moe::cuda_moe
