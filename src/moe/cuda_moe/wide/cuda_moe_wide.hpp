#pragma once
// Launchers of cuda_moe's wide expert kernel (cuda_moe_wide.cu, SM 9.0): the routed experts of a
// prefill on wgmma, NVFP4 weights decoded in registers as its A, a token block of 32, 64 or 128
// entries of one expert gathered into shared memory as its B (cuda_moe_shape.hpp says where it is taken).
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstdint>

#include "moe/cuda_moe/cuda_moe_kernels.hpp"
#include "moe/cuda_moe/cuda_moe_shape.hpp"

namespace fp4gemm::moe::cuda_moe {

// The wide kernel's per-call scratch (WorkspaceLayout::wide_blocks, wide_packed): at most
// `max_blocks` token blocks (wide_token_blocks) of `entries` (wide_block_entries: 32, 64 or 128).
struct WideScratch {
  void* blocks = nullptr;  // (max_blocks + 1) int4
  void* packed = nullptr;  // max_blocks x chunks of max(H, I) x entries x 64 BF16
  std::int64_t max_blocks = 0;
  int entries = kWideEntries;
};

// Whether the wide kernel can serve these experts for this x: NVFP4 weights, BF16 x whose rows
// start 16-byte aligned, H and I multiples of 64.
bool wide_takes(const StackedExperts& gate_up, const StackedExperts& down, const DeviceRows& x);

// h [entries, I] BF16 = SiLU(gs·(a·gateᵀ))·(us·(a·upᵀ)), then y [entries, H] FP32 = ds·(h·downᵀ),
// over the routed `grouping` (its device lists: active experts, offsets, entry_token), as
// launch_mma_gate_up and launch_mma_down compute them: four launches (the token blocks, the
// gathered x, gate_up, the packed h, down; five with the pack of h).
void launch_wide_experts(const StackedExperts& gate_up, const StackedExperts& down, const DeviceRows& x, const Grouping& grouping,
                         const WideScratch& scratch, __nv_bfloat16* h, float* y, cudaStream_t stream);

}  // namespace fp4gemm::moe::cuda_moe
