#pragma once
// The tensor-core expert kernel's launchers (cuda_moe_mma.cu): NVFP4 experts with BF16 x, the
// intermediate h kept in BF16 between the two launches.
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include "moe/cuda_moe/cuda_moe_kernels.hpp"

namespace fp4gemm::moe::cuda_moe {

// Whether the tensor-core kernel serves these experts for this x: NVFP4 weights, BF16 x whose
// rows start 16-byte aligned (its activation loads are 16 bytes wide).
bool mma_takes(const StackedExperts& weights, const DeviceRows& x);

// How a pass runs: `entry_tiles` (1, 2 or 4; mma_entry_tiles) entries of 8 it holds, whether
// its loads and decode go in two register stages (mma_pipelined), and the warps a block splits K
// over (kMmaWarpsK, or kMmaFewWarpsK at one entry tile; mma_warps_k).
struct MmaPass {
  int entry_tiles = 1;
  bool pipelined = false;
  int warps_k = 4;
};

// h [entries, I] BF16 = SiLU(gs·(a·gateᵀ))·(us·(a·upᵀ)), a the entry's row of x (as launch_gate_up
// with round_to_bf16).
void launch_mma_gate_up(const StackedExperts& weights, const DeviceRows& x, const Grouping& grouping, const MmaPass& pass,
                        __nv_bfloat16* h, cudaStream_t stream, bool programmatic);

// y [entries, H] FP32 = ds·(h·downᵀ), h as launch_mma_gate_up wrote it.
void launch_mma_down(const StackedExperts& weights, const __nv_bfloat16* h, const Grouping& grouping, const MmaPass& pass,
                     float* y, cudaStream_t stream, bool programmatic);

}  // namespace fp4gemm::moe::cuda_moe
