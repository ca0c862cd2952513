#pragma once
// The tensor-core expert kernels' launchers: NVFP4 experts with BF16 x, the intermediate h kept in
// BF16 between the two launches. Two kernels share one tile (cuda_moe_mma_tile.cuh): the weights
// loaded into registers (cuda_moe_mma.cu, SM 8.0+, any K), or streamed through a shared-memory
// ring of bulk copies (cuda_moe_mma_bulk.cu, SM 9.0, K a multiple of kMmaBulkStageColumns).
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include "moe/cuda_moe/cuda_moe_kernels.hpp"

namespace fp4gemm::moe::cuda_moe {

// Whether the tensor-core kernel serves these experts for this x: NVFP4 weights, BF16 x whose
// rows start 16-byte aligned (its activation loads are 16 bytes wide).
bool mma_takes(const StackedExperts& weights, const DeviceRows& x);
// Whether the bulk-copy kernel serves them on a GPU of SM `sm` (major·10 + minor): as mma_takes, on
// SM 9.0 (its copies are sm_90 instructions, compiled for sm_90a only), K a multiple of the stage.
bool mma_bulk_takes(const StackedExperts& weights, const DeviceRows& x, int sm);

// h [entries, I] BF16 = SiLU(gs·(a·gateᵀ))·(us·(a·upᵀ)), a the entry's row of x (as launch_gate_up
// with round_to_bf16). `entry_tiles` (1, 2 or 4; mma_entry_tiles): entries of 8 a pass holds.
void launch_mma_gate_up(const StackedExperts& weights, const DeviceRows& x, const Grouping& grouping, int entry_tiles,
                        __nv_bfloat16* h, cudaStream_t stream);

// y [entries, H] FP32 = ds·(h·downᵀ), h as launch_mma_gate_up wrote it.
void launch_mma_down(const StackedExperts& weights, const __nv_bfloat16* h, const Grouping& grouping, int entry_tiles,
                     float* y, cudaStream_t stream);

// The same two GEMMs on the bulk-copy kernel (mma_bulk_takes must hold for both) in `shape`
// (cuda_moe_shape.hpp: entry tiles, ring stages, each GEMM's K splits).
void launch_mma_bulk_gate_up(const StackedExperts& weights, const DeviceRows& x, const Grouping& grouping, const MmaBulkLaunch& shape,
                             __nv_bfloat16* h, cudaStream_t stream);
void launch_mma_bulk_down(const StackedExperts& weights, const __nv_bfloat16* h, const Grouping& grouping, const MmaBulkLaunch& shape,
                          float* y, cudaStream_t stream);

// down reads h, BF16 [entries, I] indexed by entry (not through entry_token).
inline DeviceRows mma_down_input(const StackedExperts& down, const __nv_bfloat16* h) { return {h, true, down.cols}; }
inline Grouping mma_down_grouping(Grouping grouping) {
  grouping.entry_token = nullptr;
  return grouping;
}

}  // namespace fp4gemm::moe::cuda_moe
