#pragma once
// The prepared MoE layers behind torch.ops.fp4gemm.prepare_moe / moe: one moe::MoeRunner per
// backend request, and the table of layers keyed by the int id prepare_moe returns (the same
// design as the dense weight table, weight_table.hpp: an id keeps moe's arguments plain).
// A layer's checkpoint tensors are host tensors; the runner for a CUDA device makes its own GPU
// layout from them when it first serves the layer (cuda_moe), so GPU memory holds the experts once.
#include <ATen/ATen.h>

#include <cstdint>
#include <string>
#include <vector>

#include "fp4gemm/moe/moe_runner.hpp"
#include "weight_table.hpp"

namespace fp4gemm::torch_ops {

// Records a layer: `tensors` are kept alive as long as the id (the views in `weights` point into
// them). Validates the weights (moe::validate_moe_weights) and returns the id.
std::int64_t register_moe_layer(std::vector<at::Tensor> tensors, moe::MoeWeights weights);

// The runner for x at `placement` and backend request `backend` ("auto" or an MoE backend's name),
// and layer `id`'s handle for it (made on first use).
struct MoeTarget {
  moe::MoeRunner* runner = nullptr;
  moe::MoeLayerHandle layer;
  std::int64_t hidden = 0;
};
MoeTarget moe_target(std::int64_t id, const std::string& backend, const Placement& placement);

// Forgets layer `id`; an unknown id is an error.
void release_moe_layer(std::int64_t id);

}  // namespace fp4gemm::torch_ops
