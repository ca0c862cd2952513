#pragma once
// The host steps of an MoE call that every backend may use or fuse: routing and permutation.
#include <cstdint>
#include <vector>

#include "fp4gemm/types.hpp"

namespace fp4gemm::moe {

// Top-k of each token: ids [T, k] and weights [T, k], row-major.
struct TopK {
  std::int64_t tokens = 0;
  int k = 0;
  std::vector<std::int32_t> ids;
  std::vector<float> weights;
};

// logits [T, E] = x · routerᵀ: FP64 accumulation over H in index order, rounded to FP32 (so any
// two implementations that add in index order agree bit for bit and pick the same experts).
// x [T, H] and router [E, H] are host BF16/FP32 views.
std::vector<float> router_logits(const DenseView& x, const DenseView& router);

// softmax over each row of logits [T, E] (FP32), then the k largest probabilities, ties to the
// lower expert index, in descending order; renormalised to sum 1 when `normalize`. Experts are
// ranked by logit (softmax keeps the order, and equal logits are the ties). Softmax and
// renormalisation run in FP64. Throws Error on k outside [1, E] or a non-finite logit.
TopK route_from_logits(const float* logits, std::int64_t tokens, std::int64_t experts, int k, bool normalize);

// Tokens grouped by expert: for expert e, entries [offsets[e], offsets[e+1]) of `token` (which row
// of x) and `slot` (which of the token's k choices, so the combine knows the weight). Within an
// expert, tokens keep ascending order, so a run is deterministic.
struct Permutation {
  std::vector<std::int64_t> offsets;  // E + 1
  std::vector<std::int32_t> token;    // T·k
  std::vector<std::int32_t> slot;     // T·k
  std::int64_t active_experts() const;  // experts with at least one token
};

// Throws Error (invalid_argument) when an id is outside [0, experts).
Permutation permute_by_expert(const TopK& routing, std::int64_t experts);

}  // namespace fp4gemm::moe
