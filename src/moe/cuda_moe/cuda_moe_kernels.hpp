#pragma once
// Launchers of the `cuda_moe` kernels (cuda_moe_routing.cu, cuda_moe_experts.cu). Every launcher
// enqueues on `stream` only, allocates nothing and checks its launch (cuda::check_launch, or the
// status of cudaLaunchKernelEx). Those taking `programmatic` launch the decode chain's kernels as
// programmatic dependent launches when it is true (cuda_moe_launch.cuh; moe_programmatic_launch
// decides).
// Indices of tokens, slots and permuted entries are int32 (the backend refuses T·k >= 2^31);
// element offsets are computed in 64 bits.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "fp4gemm/types.hpp"
#include "moe/cuda_moe/cuda_moe_shape.hpp"

namespace fp4gemm::moe::cuda_moe {

// Rows of an activation on the device: x (BF16 or FP32, `stride` elements per row) or h (FP32).
struct DeviceRows {
  const void* data = nullptr;
  bool bf16 = false;
  std::int64_t stride = 0;
};

// Experts' weights stacked on the device. NVFP4: expert e's [rows, cols] matrix has its codes at
// codes + e·rows·cols/2 (each 32-bit word's 8 codes in fragment order: cuda_moe_code_order.hpp)
// and its linear scales at scales + e·rows·cols/16; global_scales holds gate and up per expert
// (gate_up, whose rows are gate then up), or down's. Dense (a BF16/FP32 shared
// expert, exact in FP32): `dense` is FP32 [E, rows, cols], codes, scales and global_scales null.
struct StackedExperts {
  const std::uint8_t* codes = nullptr;
  const std::uint8_t* scales = nullptr;
  const float* global_scales = nullptr;
  const float* dense = nullptr;
  std::int64_t rows = 0, cols = 0;
};

// Which permuted entries each expert owns. Routed experts: the device lists written by
// launch_permute (active[slot] for slot < *active_count; expert e owns entries
// [offsets[e], offsets[e+1]); entry_token[entry] is its row of x). The shared expert: `active` is
// null, one group (expert 0) owns entries [0, single_group_entries), entry == token, and block y
// of the grid takes entries [y·single_group_slice, (y+1)·single_group_slice).
struct Grouping {
  const std::int32_t* active_count = nullptr;
  const std::int32_t* active = nullptr;
  const std::int32_t* offsets = nullptr;
  const std::int32_t* entry_token = nullptr;
  std::int64_t single_group_entries = 0;
  std::int64_t single_group_slice = 0;
  std::int64_t expert_slots = 0;  // grid.y: the most groups (or shared-expert slices) that can be active
};

// logits [T, E] = x·routerᵀ (FP64 sums rounded to FP32, as router_logits(); kRouterSplits warps
// per expert, blocks over experts and token tiles), then ids / weights [T, k] = softmax + top-k, ties to the
// lower index, descending, renormalised when `normalize` (one warp per token). A token with a
// non-finite logit gets valid ids and NaN weights (its output is NaN: the device cannot throw).
// experts <= kMaxExperts.
void launch_route(const DeviceRows& x, std::int64_t tokens, std::int64_t hidden, const float* router,
                  std::int64_t experts, int k, bool normalize, float* logits, std::int32_t* ids, float* weights,
                  cudaStream_t stream, bool programmatic);

// The second half of launch_route alone: ids / weights from logits [T, E] made otherwise (the router
// GEMM, cuda_moe_router_gemm.hpp).
void launch_top_k(const float* logits, std::int64_t tokens, std::int64_t experts, int k, bool normalize, std::int32_t* ids,
                  float* weights, cudaStream_t stream, bool programmatic);

// weights[t] = sigmoid(x[t]·gate) with an FP64 sum, or 1 when gate is null.
void launch_shared_gate(const DeviceRows& x, std::int64_t tokens, std::int64_t hidden, const float* gate, float* weights,
                        cudaStream_t stream);

// The permutation: counts, offsets [E+1], the active experts in ascending order and their count,
// entry_token [T·k] and entry_of [T·k] (the entry of token t's slot s at t·k + s; -1 for an id
// outside [0, E), which launch_combine turns into NaN outputs). `counts` and `cursor` are scratch
// (unused when T·k <= kOneBlockPermuteEntries: one block keeps them in shared memory).
// Within an expert the order of entries depends on atomics; the results do not (each entry is
// computed alone and the combine reads entries by (token, slot)).
struct PermutationArrays {
  std::int32_t *counts, *offsets, *cursor, *active, *active_count, *entry_token, *entry_of;
};
void launch_permute(const std::int32_t* ids, std::int64_t tokens, int k, std::int64_t experts,
                    const PermutationArrays& arrays, cudaStream_t stream, bool programmatic);

// h[entry, i] = SiLU(gs·(a·gate_iᵀ))·(us·(a·up_iᵀ)) for every entry of every active group, a its
// row of `input`; rounded to BF16 when `round_to_bf16` (x's dtype), stored as FP32 [entries, I].
// weights: [2I, H] per expert, global_scales gate, up per expert. One launch, on `kernel` (NVFP4
// weights; dense ones take the staged kernel).
void launch_gate_up(const StackedExperts& weights, const DeviceRows& input, const Grouping& grouping,
                    bool round_to_bf16, ExpertKernel kernel, float* h, cudaStream_t stream);

// y[entry, c] = ds·(h[entry]·down_cᵀ), FP32 [entries, H]. weights: [H, I] per expert. One launch.
// h and y are both indexed by entry (grouping.entry_token is not used).
void launch_down(const StackedExperts& weights, const float* h, const Grouping& grouping, ExpertKernel kernel, float* y,
                 cudaStream_t stream);

// Moves the codes of `words` 32-bit words (checkpoint order, as uploaded) into fragment order in
// place (cuda_moe_code_order.hpp); once per stacked expert set, at prepare.
void launch_to_fragment_order(std::uint8_t* codes, std::int64_t words, cudaStream_t stream);

// out[t, c] = Σ_s weights[t, s]·y[entry_of[t, s], c] (slot order) + shared_weight[t]·shared_y[t, c]
// (when shared_y is given), rounded once to out's dtype.
void launch_combine(const float* y, const std::int32_t* entry_of, const float* topk_weights, std::int64_t tokens, int k,
                    std::int64_t hidden, const float* shared_y, const float* shared_weight, const MutableDenseView& out,
                    cudaStream_t stream, bool programmatic);

}  // namespace fp4gemm::moe::cuda_moe
