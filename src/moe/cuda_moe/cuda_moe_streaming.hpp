#pragma once
// The streaming expert kernel's launcher (cuda_moe_streaming.cu), for launch_gate_up / launch_down.
#include <cuda_runtime_api.h>

#include "moe/cuda_moe/cuda_moe_kernels.hpp"

namespace fp4gemm::moe::cuda_moe {

// kGateUp: h = SiLU(gate)·up over every active group's entries, else y = h·downᵀ (as
// launch_gate_up / launch_down). NVFP4 experts only (weights.dense is null).
template <bool kGateUp>
void launch_streaming(const StackedExperts& weights, const DeviceRows& input, const Grouping& grouping, bool round_to_bf16,
                      float* out, cudaStream_t stream, const char* what);

}  // namespace fp4gemm::moe::cuda_moe
