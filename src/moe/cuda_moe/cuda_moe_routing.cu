// The routing and permutation kernels of `cuda_moe`: router GEMM + softmax + top-k per token,
// the shared expert's sigmoid gate, and the grouping of (token, slot) entries by expert.
#include <cuda_bf16.h>

#include <cub/block/block_scan.cuh>

#include <cmath>

#include "backends/cuda_common/cuda_check.hpp"
#include "moe/cuda_moe/cuda_moe_kernels.hpp"
#include "moe/cuda_moe/cuda_moe_launch.cuh"
#include "moe/cuda_moe/cuda_moe_shape.hpp"

namespace fp4gemm::moe::cuda_moe {
namespace {

constexpr unsigned kFullMask = 0xFFFFFFFFu;
constexpr int kRoutingWarps = kRoutingThreads / 32;
constexpr int kRouterExpertsPerBlock = kRoutingWarps / kRouterSplits;

__device__ __forceinline__ float load_element(const DeviceRows& rows, std::int64_t row, std::int64_t col) {
  const std::int64_t index = row * rows.stride + col;
  return rows.bf16 ? __bfloat162float(static_cast<const __nv_bfloat16*>(rows.data)[index])
                   : static_cast<const float*>(rows.data)[index];
}

__device__ __forceinline__ double warp_sum(double value) {
  for (int offset = 16; offset > 0; offset /= 2) value += __shfl_xor_sync(kFullMask, value, offset);
  return value;
}

// x[token]·weight (FP64 products and sum, the lanes' partial sums combined by a fixed butterfly),
// the same in every lane. The reference adds in index order; the two FP64 sums differ by a few
// FP64 ulps, which rounding to FP32 removes unless the sum lies within them of an FP32 midpoint.
__device__ double warp_dot(const DeviceRows& x, std::int64_t token, const float* weight, std::int64_t hidden) {
  const int lane = threadIdx.x % 32;
  double sum = 0.0;
  for (std::int64_t i = lane; i < hidden; i += 32) sum += double(load_element(x, token, i)) * double(weight[i]);
  return warp_sum(sum);
}

// Larger logit first; equal logits: the lower expert index first; expert -1 (none) last.
__device__ __forceinline__ bool ranks_before(float logit, int expert, float other_logit, int other_expert) {
  if (expert < 0) return false;
  if (other_expert < 0) return true;
  return logit > other_logit || (logit == other_logit && expert < other_expert);
}

// logits[t, e] = x[t]·router[e]: kRouterSplits warps per expert, each over every
// kRouterSplits-th group of 4 elements (16-byte router loads), their FP64 partial sums added in
// split order; kRouterTokensPerBlock tokens per block (the router rows are re-read per token from
// L1/L2). At decode the router streams through E / kRouterExpertsPerBlock blocks with several
// loads in flight per lane, not through one block per token.
__global__ void __launch_bounds__(kRoutingThreads)
router_logits_kernel(DeviceRows x, std::int64_t tokens, std::int64_t hidden, const float* __restrict__ router, int experts,
                     float* __restrict__ logits) {
  __shared__ double partial[kRoutingWarps];
  enter_dependent_kernel();
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int expert = int(blockIdx.x) * kRouterExpertsPerBlock + warp / kRouterSplits;
  const int split = warp % kRouterSplits;
  const bool valid = expert < experts;  // whole warps; invalid ones still join the barriers
  const float4* row = reinterpret_cast<const float4*>(router + std::int64_t(valid ? expert : 0) * hidden);
  const std::int64_t groups = hidden / 4;  // H is a multiple of 16
  const std::int64_t first = std::int64_t(blockIdx.y) * kRouterTokensPerBlock;
  const std::int64_t last = first + kRouterTokensPerBlock < tokens ? first + kRouterTokensPerBlock : tokens;
  for (std::int64_t token = first; token < last; ++token) {
    double sum = 0.0;
    if (valid) {
#pragma unroll 8
      for (std::int64_t group = split * 32 + lane; group < groups; group += kRouterSplits * 32) {
        const float4 weight = __ldg(row + group);
        const std::int64_t col = 4 * group;
        // FP64 products of FP32 values are exact, so fma and multiply-then-add agree.
        sum = fma(double(load_element(x, token, col)), double(weight.x), sum);
        sum = fma(double(load_element(x, token, col + 1)), double(weight.y), sum);
        sum = fma(double(load_element(x, token, col + 2)), double(weight.z), sum);
        sum = fma(double(load_element(x, token, col + 3)), double(weight.w), sum);
      }
    }
    sum = warp_sum(sum);
    if (lane == 0) partial[warp] = sum;
    __syncthreads();
    if (valid && split == 0 && lane == 0) {
      double total = partial[warp];
      for (int s = 1; s < kRouterSplits; ++s) total += partial[warp + s];
      logits[token * experts + expert] = float(total);
    }
    __syncthreads();  // `partial` is rewritten for the next token
  }
}

// One warp per token (kRoutingWarps tokens a block), no shared memory and no barriers. Each lane
// holds the logits of experts lane, lane + 32, ... (kPerLane slots: E <= 32·kPerLane; every load is
// issued before any is used, loops have no early exit). k arg-max passes: each takes the best
// expert that ranks after the previous pick (larger logit, equal logits the lower index first: a
// strict order on finite logits, so none is picked twice without a set of chosen experts), by a
// tree over the lane's slots and a shuffle butterfly over the lanes. The lane whose index is the
// slot keeps the pick's logit, so the softmax reads nothing back (k > 32 reads the rest from
// `logits`). Then the FP64 softmax denominator, each lane's partial sum added by a fixed butterfly
// (deterministic). On an H100 at T = 1, E = 512 the loops that stopped at the first index past E
// took 24 us: their loads and compares ran one after another.
// Folds slots [0, 2·kWidth) of a lane's candidates into slot 0 by halves (a tree of depth
// log2(2·kWidth) instead of a chain of 2·kWidth compares); the order is strict, so the result is the
// sequential scan's.
template <int kWidth, int kSlots>
__device__ __forceinline__ void fold_best(float (&logit)[kSlots], int (&expert)[kSlots]) {
#pragma unroll
  for (int i = 0; i < kWidth; ++i) {
    if (ranks_before(logit[i + kWidth], expert[i + kWidth], logit[i], expert[i])) {
      logit[i] = logit[i + kWidth];
      expert[i] = expert[i + kWidth];
    }
  }
  if constexpr (kWidth > 1) fold_best<kWidth / 2>(logit, expert);
}

template <int kPerLane>
__global__ void __launch_bounds__(kRoutingThreads)
top_k_kernel(const float* __restrict__ all_logits, std::int64_t tokens, int experts, int k, bool normalize,
             std::int32_t* __restrict__ ids, float* __restrict__ weights) {
  enter_dependent_kernel();
  const std::int64_t token = std::int64_t(blockIdx.x) * kRoutingWarps + threadIdx.x / 32;
  if (token >= tokens) return;  // whole warps leave together
  const int lane = threadIdx.x % 32;
  const float* logits = all_logits + token * experts;
  std::int32_t* token_ids = ids + token * k;

  float mine[kPerLane];
#pragma unroll
  for (int i = 0; i < kPerLane; ++i) mine[i] = 32 * i + lane < experts ? logits[32 * i + lane] : 0.0f;
  bool local_non_finite = false;
#pragma unroll
  for (int i = 0; i < kPerLane; ++i) local_non_finite |= 32 * i + lane < experts && !isfinite(mine[i]);
  const bool non_finite = __any_sync(kFullMask, local_non_finite);

  float last_logit = 0.0f, largest_logit = 0.0f, chosen_logit = 0.0f;  // chosen: slot `lane`'s pick
  int last_expert = -1;  // the previous pick; -1: none yet
  for (int slot = 0; slot < k; ++slot) {
    float logit[kPerLane];
    int expert[kPerLane];
#pragma unroll
    for (int i = 0; i < kPerLane; ++i) {
      const int e = 32 * i + lane;
      const bool after_last = last_expert < 0 || ranks_before(last_logit, last_expert, mine[i], e);
      logit[i] = mine[i];
      expert[i] = e < experts && after_last ? e : -1;
    }
    fold_best<kPerLane / 2>(logit, expert);
    float best_logit = logit[0];
    int best_expert = expert[0];
    for (int offset = 16; offset > 0; offset /= 2) {
      const float other_logit = __shfl_xor_sync(kFullMask, best_logit, offset);
      const int other_expert = __shfl_xor_sync(kFullMask, best_expert, offset);
      if (ranks_before(other_logit, other_expert, best_logit, best_expert)) {
        best_logit = other_logit;
        best_expert = other_expert;
      }
    }
    // NaN logits rank nowhere; any valid index keeps the later kernels in bounds (weights are NaN).
    if (best_expert < 0) best_expert = slot % experts;
    if (lane == 0) token_ids[slot] = best_expert;
    if (slot == 0) largest_logit = best_logit;
    if (slot == lane) chosen_logit = best_logit;
    last_logit = best_logit;
    last_expert = best_expert;
  }
  __syncwarp();  // lane 0's picks, read below past slot 31

  const double largest = double(largest_logit);
  double partial = 0.0;
#pragma unroll
  for (int i = 0; i < kPerLane; ++i) {
    if (32 * i + lane < experts) partial += exp(double(mine[i]) - largest);
  }
  const double total = warp_sum(partial);
  const auto slot_logit = [&](int slot) { return slot < 32 ? chosen_logit : logits[token_ids[slot]]; };
  double chosen_partial = 0.0;
  for (int slot = lane; slot < k; slot += 32) chosen_partial += exp(double(slot_logit(slot)) - largest) / total;
  const double chosen_total = warp_sum(chosen_partial);
  for (int slot = lane; slot < k; slot += 32) {
    const double probability = exp(double(slot_logit(slot)) - largest) / total;
    weights[token * k + slot] = non_finite ? __int_as_float(0x7FC00000) : float(normalize ? probability / chosen_total : probability);
  }
}

__global__ void shared_gate_kernel(DeviceRows x, std::int64_t tokens, std::int64_t hidden, const float* __restrict__ gate,
                                   float* __restrict__ weights) {
  const std::int64_t token = std::int64_t(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
  if (token >= tokens) return;  // whole warps leave together
  const double logit = gate == nullptr ? 0.0 : warp_dot(x, token, gate, hidden);
  if (threadIdx.x % 32 == 0) weights[token] = gate == nullptr ? 1.0f : float(1.0 / (1.0 + exp(-logit)));
}

// Counts entry `entry` for its expert (`counts`: global or shared); ids outside [0, E) are left out.
__device__ __forceinline__ void count_entry(const std::int32_t* __restrict__ ids, std::int64_t entry, int experts,
                                            std::int32_t* counts) {
  const std::int32_t id = ids[entry];
  if (id >= 0 && id < experts) atomicAdd(&counts[id], 1);
}

__global__ void count_kernel(const std::int32_t* __restrict__ ids, std::int64_t entries, int experts,
                             std::int32_t* __restrict__ counts) {
  const std::int64_t entry = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (entry < entries) count_entry(ids, entry, experts, counts);
}

// One block-wide scan serves both sums of scan_counts: a thread's entries in the high 32 bits and
// its active experts in the low 32 (T·k < 2^31 and E <= kMaxExperts, so neither half carries).
using CountScan = cub::BlockScan<unsigned long long, kScanThreads>;

// The block's scan of the per-expert counts (thread i owns a contiguous range of experts):
// offsets (exclusive scan), cursor = offsets, the active experts ascending and their count.
// `cursor` may be `counts` itself (each count is read before its cursor is written).
__device__ void scan_counts(const std::int32_t* counts, int experts, std::int32_t* __restrict__ offsets, std::int32_t* cursor,
                            std::int32_t* __restrict__ active, std::int32_t* __restrict__ active_count,
                            CountScan::TempStorage& scratch) {
  const int per_thread = (experts + kScanThreads - 1) / kScanThreads;
  const int first = threadIdx.x * per_thread, last = min(first + per_thread, experts);
  unsigned long long mine = 0;
  for (int e = first; e < last; ++e) mine += (static_cast<unsigned long long>(counts[e]) << 32) + (counts[e] > 0 ? 1u : 0u);
  unsigned long long base = 0, total = 0;
  CountScan(scratch).ExclusiveSum(mine, base, total);
  int entry_base = int(base >> 32), active_base = int(base & 0xFFFFFFFFu);
  for (int e = first; e < last; ++e) {
    const int count = counts[e];
    offsets[e] = entry_base;
    cursor[e] = entry_base;
    entry_base += count;
    if (count > 0) active[active_base++] = e;
  }
  if (threadIdx.x == 0) {
    offsets[experts] = int(total >> 32);
    *active_count = int(total & 0xFFFFFFFFu);
  }
}

// One block: the scan of the counts that count_kernel left in global memory.
__global__ void __launch_bounds__(kScanThreads)
scan_kernel(const std::int32_t* __restrict__ counts, int experts, std::int32_t* __restrict__ offsets,
            std::int32_t* __restrict__ cursor, std::int32_t* __restrict__ active, std::int32_t* __restrict__ active_count) {
  __shared__ CountScan::TempStorage scratch;
  scan_counts(counts, experts, offsets, cursor, active, active_count, scratch);
}

// Entry `entry`'s place in its expert's range (`cursor`: global or shared); -1 for an id outside [0, E).
__device__ __forceinline__ void place_entry(const std::int32_t* __restrict__ ids, std::int64_t entry, int k, int experts,
                                            std::int32_t* cursor, std::int32_t* __restrict__ entry_token,
                                            std::int32_t* __restrict__ entry_of) {
  const std::int32_t id = ids[entry];
  if (id < 0 || id >= experts) {
    entry_of[entry] = -1;
    return;
  }
  const std::int32_t position = atomicAdd(&cursor[id], 1);
  entry_token[position] = std::int32_t(entry / k);
  entry_of[entry] = position;
}

// The whole permutation in one block when T·k <= kOneBlockPermuteEntries (decode): counts and
// cursors in shared memory, so one launch instead of a memset and three.
__global__ void __launch_bounds__(kScanThreads)
permute_in_one_block_kernel(const std::int32_t* __restrict__ ids, int entries, int k, int experts,
                            std::int32_t* __restrict__ offsets, std::int32_t* __restrict__ active,
                            std::int32_t* __restrict__ active_count, std::int32_t* __restrict__ entry_token,
                            std::int32_t* __restrict__ entry_of) {
  __shared__ std::int32_t counts[kMaxExperts];  // then the cursors
  __shared__ CountScan::TempStorage scratch;
  for (int e = threadIdx.x; e < experts; e += kScanThreads) counts[e] = 0;
  enter_dependent_kernel();
  __syncthreads();
  for (int entry = threadIdx.x; entry < entries; entry += kScanThreads) count_entry(ids, entry, experts, counts);
  __syncthreads();
  scan_counts(counts, experts, offsets, counts, active, active_count, scratch);
  __syncthreads();
  for (int entry = threadIdx.x; entry < entries; entry += kScanThreads) place_entry(ids, entry, k, experts, counts, entry_token, entry_of);
}

__global__ void place_kernel(const std::int32_t* __restrict__ ids, std::int64_t entries, int k, int experts,
                             std::int32_t* __restrict__ cursor, std::int32_t* __restrict__ entry_token,
                             std::int32_t* __restrict__ entry_of) {
  const std::int64_t entry = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (entry < entries) place_entry(ids, entry, k, experts, cursor, entry_token, entry_of);
}

unsigned blocks_for(std::int64_t threads, int per_block) { return unsigned((threads + per_block - 1) / per_block); }

}  // namespace

void launch_route(const DeviceRows& x, std::int64_t tokens, std::int64_t hidden, const float* router,
                  std::int64_t experts, int k, bool normalize, float* logits, std::int32_t* ids, float* weights,
                  cudaStream_t stream, bool programmatic) {
  if (tokens == 0) return;
  const dim3 logit_grid(blocks_for(experts, kRouterExpertsPerBlock), blocks_for(tokens, int(kRouterTokensPerBlock)));
  launch_kernel(router_logits_kernel, logit_grid, dim3(kRoutingThreads), stream, programmatic,
                "cuda_moe: launching the router logits kernel", x, tokens, hidden, router, int(experts), logits);
  launch_top_k(logits, tokens, experts, k, normalize, ids, weights, stream, programmatic);
}

void launch_top_k(const float* logits, std::int64_t tokens, std::int64_t experts, int k, bool normalize, std::int32_t* ids,
                  float* weights, cudaStream_t stream, bool programmatic) {
  if (tokens == 0) return;
  // The top-k's logit slots a lane holds: the fewest that cover E (kMaxExperts = 32 x 64).
  const auto top_k = experts <= 256 ? top_k_kernel<8> : experts <= 512 ? top_k_kernel<16> : experts <= 1024 ? top_k_kernel<32> : top_k_kernel<64>;
  static_assert(kMaxExperts <= 32 * 64, "the widest top-k covers every expert");
  launch_kernel(top_k, dim3(blocks_for(tokens, kRoutingWarps)), dim3(kRoutingThreads), stream, programmatic,
                "cuda_moe: launching the softmax + top-k kernel", logits, tokens, int(experts), k, normalize, ids, weights);
}

void launch_shared_gate(const DeviceRows& x, std::int64_t tokens, std::int64_t hidden, const float* gate, float* weights,
                        cudaStream_t stream) {
  if (tokens == 0) return;
  constexpr int kWarps = kElementwiseThreads / 32;
  shared_gate_kernel<<<blocks_for(tokens, kWarps), kElementwiseThreads, 0, stream>>>(x, tokens, hidden, gate, weights);
  cuda::check_launch("cuda_moe: launching the shared expert's gate kernel");
}

void launch_permute(const std::int32_t* ids, std::int64_t tokens, int k, std::int64_t experts,
                    const PermutationArrays& arrays, cudaStream_t stream, bool programmatic) {
  const std::int64_t entries = tokens * k;
  if (entries == 0) return;
  if (entries <= kOneBlockPermuteEntries) {
    launch_kernel(permute_in_one_block_kernel, dim3(1), dim3(kScanThreads), stream, programmatic,
                  "cuda_moe: launching the one-block permutation kernel", ids, int(entries), k, int(experts), arrays.offsets,
                  arrays.active, arrays.active_count, arrays.entry_token, arrays.entry_of);
    return;
  }
  cuda::check_cuda(cudaMemsetAsync(arrays.counts, 0, std::size_t(experts) * sizeof(std::int32_t), stream),
                   "cuda_moe: zeroing the per-expert counts");
  count_kernel<<<blocks_for(entries, kElementwiseThreads), kElementwiseThreads, 0, stream>>>(ids, entries, int(experts),
                                                                                             arrays.counts);
  cuda::check_launch("cuda_moe: launching the per-expert count kernel");
  scan_kernel<<<1, kScanThreads, 0, stream>>>(arrays.counts, int(experts), arrays.offsets, arrays.cursor, arrays.active,
                                              arrays.active_count);
  cuda::check_launch("cuda_moe: launching the expert offset scan");
  place_kernel<<<blocks_for(entries, kElementwiseThreads), kElementwiseThreads, 0, stream>>>(
      ids, entries, k, int(experts), arrays.cursor, arrays.entry_token, arrays.entry_of);
  cuda::check_launch("cuda_moe: launching the entry placement kernel");
}

}  // namespace fp4gemm::moe::cuda_moe
