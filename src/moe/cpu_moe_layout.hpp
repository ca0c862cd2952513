#pragma once
// The `cpu` MoE backend's prepared layer: every expert's gate and up as one [2I, H] weight in the
// dense `cpu` backend's layout (one GEMM gives both), down as another; the router hidden-major
// (router_logits.hpp); a dense shared expert as FP32 for SGEMM.
#include <memory>
#include <optional>
#include <vector>

#include "backends/cpu/cpu_backend.hpp"
#include "fp4gemm/moe/moe_backend.hpp"

namespace fp4gemm::moe {

struct CpuExpert {
  std::unique_ptr<PreparedWeight> gate_up;  // [2I, H]: gate rows, then up rows; global scales not applied
  std::unique_ptr<PreparedWeight> down;     // [H, I]
  float gate_scale = 1.0f, up_scale = 1.0f, down_scale = 1.0f;  // weight_scale_2 of each
  float gate_up_input_scale = 0.0f, down_input_scale = 0.0f;
};

struct CpuDenseExpert {
  std::int64_t intermediate = 0;
  std::vector<float> gate_up;  // [2I_s, H] FP32
  std::vector<float> down;     // [H, I_s] FP32
};

struct CpuPreparedMoe final : PreparedMoe {
  std::vector<CpuExpert> expert_weights;  // one per expert
  std::vector<float> router_by_hidden;  // [H, E]; empty without a router
  std::optional<CpuExpert> shared_nvfp4;
  std::optional<CpuDenseExpert> shared_dense;
  std::vector<float> shared_gate;  // [H]; empty: no sigmoid gate
};

// Prepares one expert's projections with the dense `cpu` backend.
CpuExpert prepare_cpu_expert(CpuBackend& gemm, const ExpertProjections& projections, const DeviceInfo& device);
// Bytes the prepared layer keeps in host memory.
std::int64_t cpu_moe_resident_bytes(const CpuPreparedMoe& layer);

}  // namespace fp4gemm::moe
