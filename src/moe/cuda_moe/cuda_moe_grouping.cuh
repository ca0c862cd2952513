#pragma once
// Which expert and which permuted entries a block of a grouped expert kernel owns (the Grouping
// contract of cuda_moe_kernels.hpp), shared by the staged and the streaming expert kernels.
// CUDA sources only.
#include <cuda_bf16.h>

#include <cstdint>

#include "moe/cuda_moe/cuda_moe_kernels.hpp"

namespace fp4gemm::moe::cuda_moe {

struct GroupEntries {
  std::int64_t expert = 0, begin = 0, end = 0;
};

// The group of grid row blockIdx.y; false when it has no entries (a slot beyond the device-side
// active count, or an empty shared-expert slice). Uniform per block, so a block that leaves on
// false never splits a __syncthreads.
__device__ __forceinline__ bool block_group(const Grouping& grouping, GroupEntries& group) {
  if (grouping.active != nullptr) {
    if (int(blockIdx.y) >= *grouping.active_count) return false;
    group.expert = grouping.active[blockIdx.y];
    group.begin = grouping.offsets[group.expert];
    group.end = grouping.offsets[group.expert + 1];
    return true;
  }
  group.expert = 0;
  group.begin = std::int64_t(blockIdx.y) * grouping.single_group_slice;
  const std::int64_t end = group.begin + grouping.single_group_slice;
  group.end = end < grouping.single_group_entries ? end : grouping.single_group_entries;
  return group.begin < group.end;
}

__device__ __forceinline__ float warp_sum(float value) {
  for (int offset = 16; offset > 0; offset /= 2) value += __shfl_xor_sync(0xFFFFFFFFu, value, offset);
  return value;
}

// The gate_up epilogue: SiLU(gate)·up, rounded to BF16 when x is BF16 (as the reference does).
__device__ __forceinline__ float silu_mul(float gate, float up, bool round_to_bf16) {
  float h = gate / (1.0f + expf(-gate)) * up;
  if (round_to_bf16) h = __bfloat162float(__float2bfloat16_rn(h));
  return h;
}

}  // namespace fp4gemm::moe::cuda_moe
