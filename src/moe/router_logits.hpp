#pragma once
// The router GEMM with the router stored hidden-major, so the inner loop runs over contiguous
// experts (it vectorises while each expert's sum still adds in index order over H).
#include <cstdint>
#include <vector>

#include "fp4gemm/types.hpp"

namespace fp4gemm::moe {

// router [E, H] (BF16/FP32 host view) as FP32 [H, E].
std::vector<float> router_by_hidden(const DenseView& router);

// logits [T, E] from x [T, H] and router_by_hidden [H, E]; as router_logits() (moe_routing.hpp).
void router_logits_by_hidden(const DenseView& x, const float* router_by_hidden, std::int64_t experts, float* logits);

}  // namespace fp4gemm::moe
