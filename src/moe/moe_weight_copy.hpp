#pragma once
// Host copies of a layer's weights that a backend owns: NVFP4 projections with linear scales, dense
// weights as FP32. The copy's MoeWeights points into it.
#include <string>
#include <vector>

#include "fp4gemm/format/nvfp4_matrix.hpp"
#include "fp4gemm/moe/moe_layer.hpp"

namespace fp4gemm::moe {

// NOTE: `weights` points into the other members: movable, not copyable.
struct MoeWeightCopy {
  MoeWeightCopy() = default;
  MoeWeightCopy(MoeWeightCopy&&) = default;
  MoeWeightCopy& operator=(MoeWeightCopy&&) = default;
  MoeWeightCopy(const MoeWeightCopy&) = delete;
  MoeWeightCopy& operator=(const MoeWeightCopy&) = delete;

  MoeWeights weights;
  std::vector<Nvfp4Matrix> matrices;
  std::vector<std::vector<float>> dense;
  std::int64_t bytes() const;  // what the copies hold
};

// A host view's block scales in the linear layout (copied, or unswizzled).
std::vector<std::uint8_t> linear_scales(const Nvfp4View& view);
// A host BF16/FP32 view as FP32 [rows, cols]. Throws Error naming `backend` for another memory.
std::vector<float> dense_as_f32(const DenseView& view, const std::string& backend);

// Copies host weights (validated by the caller). Throws Error when a tensor is not in host memory.
MoeWeightCopy copy_moe_weights(const MoeWeights& weights, const std::string& backend);

}  // namespace fp4gemm::moe
