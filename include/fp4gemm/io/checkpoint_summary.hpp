#pragma once
// What `fp4gemm inspect` reports about a checkpoint: its quant config, tensor counts and bytes per
// class, and the distinct GEMM shapes of its NVFP4 layers.
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "fp4gemm/io/modelopt.hpp"
#include "fp4gemm/io/moe_checkpoint.hpp"

namespace fp4gemm::io {

struct ClassTotals {
  std::int64_t tensors = 0;
  std::int64_t bytes = 0;
  std::int64_t nvfp4_layers = 0;
};

struct GemmShape {
  std::int64_t n = 0;  // output features (rows of the weight)
  std::int64_t k = 0;  // input features
  std::int64_t count = 0;
  std::set<std::string> classes;
};

struct CheckpointSummary {
  QuantConfig config;
  std::int64_t files = 0;
  std::int64_t tensors = 0;
  std::int64_t bytes = 0;  // of tensor data
  std::int64_t nvfp4_layers = 0;
  std::int64_t modelopt_layers = 0;
  std::int64_t compressed_tensors_layers = 0;
  std::int64_t layers_with_input_scale = 0;
  std::map<TensorClass, ClassTotals> classes;
  std::vector<GemmShape> shapes;  // sorted by (n, k); a fused expert tensor counts once per expert
  std::vector<MoeLayerShape> moe_layers;  // sorted by prefix
  MoeRoutingConfig moe_routing;           // config.json's top-k and norm_topk_prob
};

// Validates every NVFP4 layer's dtypes and shapes (fused 3-D expert tensors included) (not each block scale: that is a full pass over
// the scales; `gemm` does it for the layer it runs) and throws Error(io) on the first bad one.
CheckpointSummary summarize_checkpoint(const Checkpoint& checkpoint, const QuantConfig& config);

}  // namespace fp4gemm::io
