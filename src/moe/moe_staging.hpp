#pragma once
// Running an MoE backend on operands that live in the other memory, as the dense runner stages
// (src/dispatch/staging.hpp): x, given routing and the output are copied into the backend's memory,
// the backend runs there, and the result is copied back. The MoE runner uses it for host operands
// on a GPU backend (and GPU operands on a host backend); the canary for its host-made problem.
#include "fp4gemm/moe/moe_backend.hpp"

namespace fp4gemm::moe {

// backend.run(call, prepared, out, context) with every operand in backend.memory(): those that are
// elsewhere are copied (synchronously, ordered on context's stream), the output back into `out`.
// `carry_output`: the staged output starts as a copy of `out` (the canary's poison), else it starts
// unwritten. `device`: the CUDA ordinal of the GPU side.
void run_moe_in_backend_memory(MoeBackend& backend, const PreparedMoe& prepared, const MoeCall& call,
                               const MutableDenseView& out, const RunContext& context, int device, bool carry_output);

}  // namespace fp4gemm::moe
