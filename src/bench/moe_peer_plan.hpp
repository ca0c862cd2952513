#pragma once
// The host side of the GPU MoE peers and of their check against `ref`, free of CUDA so that CI
// tests it: how one routing becomes per-expert GEMMs (tokens gathered by expert, each active
// expert's rows, where each token's k results are combined from), which experts a run touches,
// and how a peer's output rows are judged.
#include <cstdint>
#include <string>
#include <vector>

#include "fp4gemm/moe/moe_layer.hpp"
#include "fp4gemm/moe/moe_routing.hpp"

namespace fp4gemm::bench {

struct MoePeerPlan {
  std::int64_t tokens = 0;
  int top_k = 0;
  std::vector<std::int32_t> experts;       // the active experts, ascending
  std::vector<std::int64_t> rows;          // per active expert: its tokens (its GEMMs' M)
  std::vector<std::int64_t> first_row;     // per active expert: its first row in the gathered buffer
  std::vector<std::int32_t> gather;        // [T·k]: gathered row r is token gather[r]
  std::vector<std::int32_t> combine_rows;  // [T·k]: the gathered row holding token t's choice s (index t·k + s)
  std::vector<float> combine_weights;      // [T·k]: that choice's routing weight
};

// Tokens grouped by expert (moe::permute_by_expert: ascending token order within an expert).
MoePeerPlan plan_moe_peer(const moe::TopK& routing, std::int64_t experts);

// Tokens routed to each expert (an expert named twice in a token's row counts twice).
std::vector<std::int64_t> expert_token_counts(const moe::TopK& routing, std::int64_t experts);

// The experts any of `routings` sends a token to, ascending: what a peer keeps converted copies of.
std::vector<std::int32_t> touched_experts(const std::vector<moe::TopK>& routings, std::int64_t experts);

// Tokens whose output rows are checked against `ref`: the first, the last and evenly spaced
// between, at most `count` (all when T <= count), ascending. Spread out, so at large T they sit
// at many positions inside their experts' row blocks, not only at the first rows.
std::vector<std::int64_t> check_tokens(std::int64_t tokens, int count);

// `ref` (moe_reference.hpp, FP64) on the rows `indices` of x [T, H] with their routing rows:
// [indices.size(), H]. x holds BF16 values (as FP32) and ref takes them as BF16 x, so h is rounded
// to BF16 between the GEMMs as in the engines' data flow (moe_layer.hpp) and in every timed
// implementation. The layer's result for a token does not depend on the others.
std::vector<double> reference_rows(const moe::MoeWeights& weights, const std::vector<float>& x, std::int64_t hidden,
                                   const moe::TopK& routing, const std::vector<std::int64_t>& indices);

// ‖got − expected‖₂ / ‖expected‖₂; infinity when `got` holds NaN or Inf (a NaN never passes).
double relative_error(const std::vector<float>& got, const std::vector<double>& expected);

// A relative error above this is a gross error: the peer computes something else. BF16 gate_up,
// h and expert outputs keep a correct BF16 peer below 1e-2; E4M3 x, h and weights (3 mantissa
// bits, about 5 % per operand) a correct FP8 peer near 0.1. A wrong weight, a missing SiLU or
// routing weight, or unwritten rows land near 1 or far above.
inline constexpr double kGrossRelativeError = 0.25;

// "relative error 0.0123 against ref on 4 tokens", with " (GROSS: the result is wrong)" above the bound.
std::string describe_check(double error, std::int64_t tokens);

}  // namespace fp4gemm::bench
