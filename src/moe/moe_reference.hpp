#pragma once
// The MoE oracle: the layer in FP64 with plain loops, plus, per output element, how far a correct
// FP32-accumulating backend may land from it. The `ref` MoE backend serves its values; tests and
// the runner's canary judge other backends against both.
//
// Why a tolerance per element and not one relative bound: h is rounded to x's dtype (BF16) and, for
// W4A4, quantized to NVFP4 between the GEMMs. An FP32 gate/up result that differs from FP64 by
// 1e-7 may round h to the neighbouring BF16 value (or NVFP4 code, or block scale), so a correct
// backend can differ from the oracle by a whole rounding step there and by nothing elsewhere. The
// oracle computes the interval each h may take given `accumulation_error` (relative to Σ|a·w|),
// and allows exactly the rounding steps that interval crosses.
#include <vector>

#include "fp4gemm/moe/moe_backend.hpp"

namespace fp4gemm::moe {

struct MoeReference {
  std::vector<double> values;     // [T, H], before output rounding
  std::vector<double> tolerance;  // [T, H]: |backend - value| allowed before output rounding
};

// The layer on call.x (host memory; validated by the caller). Routing: call.routing when given,
// else the router with FP64 accumulation.
MoeReference reference_moe(const MoeWeights& weights, const MoeCall& call, double accumulation_error);

// "" when every element of `out` (host) is within tolerance of the reference plus one rounding
// unit of the output dtype; else how many are not, and the first few. NaN never passes.
std::string compare_with_moe_reference(const MoeReference& reference, const DenseView& out);

}  // namespace fp4gemm::moe
