// Preparation of the `cpu` MoE layout (cpu_moe_layout.hpp).
#include "backends/cpu/cpu_layout.hpp"
#include "fp4gemm/format/nvfp4_matrix.hpp"
#include "moe/cpu_moe_backend.hpp"
#include "moe/cpu_moe_layout.hpp"
#include "moe/moe_weight_copy.hpp"
#include "moe/router_logits.hpp"

namespace fp4gemm::moe {
namespace {

void append_rows(Nvfp4Matrix& matrix, const Nvfp4View& view) {
  matrix.codes.insert(matrix.codes.end(), view.codes, view.codes + view.code_bytes());
  const std::vector<std::uint8_t> scales = linear_scales(view);
  matrix.scales.insert(matrix.scales.end(), scales.begin(), scales.end());
  matrix.rows += view.rows;
}

std::int64_t weight_bytes(const PreparedWeight& weight) { return std::int64_t(dynamic_cast<const CpuWeight&>(weight).data.size()); }

std::int64_t expert_bytes(const CpuExpert& expert) { return weight_bytes(*expert.gate_up) + weight_bytes(*expert.down); }

}  // namespace

CpuExpert prepare_cpu_expert(CpuBackend& gemm, const ExpertProjections& projections, const DeviceInfo& device) {
  if (projections.gate.memory != Memory::host || projections.up.memory != Memory::host ||
      projections.down.memory != Memory::host) {
    throw_invalid("cpu: the MoE expert weights must be in host memory");
  }
  Nvfp4Matrix gate_up;
  gate_up.cols = projections.gate.cols;
  append_rows(gate_up, projections.gate);
  append_rows(gate_up, projections.up);
  CpuExpert expert;
  expert.gate_up = gemm.prepare(gate_up.view(), device);
  Nvfp4View down = projections.down;
  down.global_scale = 1.0f;
  expert.down = gemm.prepare(down, device);
  expert.gate_scale = projections.gate.global_scale;
  expert.up_scale = projections.up.global_scale;
  expert.down_scale = projections.down.global_scale;
  expert.gate_up_input_scale = projections.gate_up_input_scale;
  expert.down_input_scale = projections.down_input_scale;
  return expert;
}

std::int64_t cpu_moe_resident_bytes(const CpuPreparedMoe& layer) {
  std::int64_t total = 0;
  for (const auto& expert : layer.expert_weights) total += expert_bytes(expert);
  if (layer.shared_nvfp4) total += expert_bytes(*layer.shared_nvfp4);
  if (layer.shared_dense) total += std::int64_t((layer.shared_dense->gate_up.size() + layer.shared_dense->down.size()) * 4);
  return total + std::int64_t((layer.router_by_hidden.size() + layer.shared_gate.size()) * 4);
}

std::unique_ptr<PreparedMoe> CpuMoeBackend::prepare(const MoeWeights& weights, const DeviceInfo& device) {
  validate_moe_weights(weights);
  auto prepared = std::make_unique<CpuPreparedMoe>();
  describe_layer(weights, *prepared);
  prepared->backend = name();
  for (const auto& projections : weights.experts) prepared->expert_weights.push_back(prepare_cpu_expert(gemm_, projections, device));
  if (weights.router.data != nullptr) prepared->router_by_hidden = router_by_hidden(weights.router);
  if (weights.shared) {
    const SharedExpert& shared = *weights.shared;
    if (shared.nvfp4) {
      prepared->shared_nvfp4 = prepare_cpu_expert(gemm_, *shared.nvfp4, device);
    } else {
      CpuDenseExpert dense;
      dense.intermediate = shared.intermediate();
      dense.gate_up = dense_as_f32(shared.dense_gate, name());
      const std::vector<float> up = dense_as_f32(shared.dense_up, name());
      dense.gate_up.insert(dense.gate_up.end(), up.begin(), up.end());
      dense.down = dense_as_f32(shared.dense_down, name());
      prepared->shared_dense = std::move(dense);
    }
    if (shared.gate.data != nullptr) prepared->shared_gate = dense_as_f32(shared.gate, name());
  }
  prepared->resident_bytes = cpu_moe_resident_bytes(*prepared);
  return prepared;
}

}  // namespace fp4gemm::moe
