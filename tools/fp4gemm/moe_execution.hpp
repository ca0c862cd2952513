#pragma once
// The one place the CLI reaches the MoE layer's implementation (moe::MoeRunner and MoeProblem's
// byte and FLOP counts). moe_execution_runner.cpp fills it in; CMakeLists.txt compiles that file
// (and `fp4gemm moe`) only when src/moe/ holds the implementation, so this tree builds and its MoE
// loading, quantizing and bench harness are tested before the layer lands. Without it,
// `bench --moe` times the peers alone and says why.
#include <functional>
#include <memory>
#include <string>

#include "bench/moe_bench.hpp"
#include "fp4gemm/moe/moe_layer.hpp"

namespace fp4gemm::cli {

// A layer prepared for the MoE runner on the host, and the backend that served its last call.
struct PreparedMoeCall {
  bench::MoeLayerCall call;
  std::function<std::string()> served;
  std::function<std::string()> explanation;  // why it served, as `fp4gemm explain` says it
};

struct MoeExecution {
  // `weights` (kept alive by the caller) through moe::MoeRunner with `backend` ("" or "auto": the
  // runner's choice) on the CPU; the returned call passes the routing it is given.
  std::function<PreparedMoeCall(const moe::MoeWeights& weights, const std::string& backend, const moe::MoeOptions& options)> prepare;
  // moe::MoeProblem's minimal bytes (for `active_experts`) and FLOPs of a BF16 call with given
  // routing on a layer of `shape` (its shared expert NVFP4).
  std::function<double(const bench::MoeBenchShape& shape, std::int64_t tokens, std::int64_t active_experts)> minimal_bytes;
  std::function<double(const bench::MoeBenchShape& shape, std::int64_t tokens)> flops;
};

// The registered execution, or nullptr in a build without the MoE layer.
const MoeExecution* moe_execution();

struct RegisterMoeExecution {
  explicit RegisterMoeExecution(MoeExecution execution);
};

}  // namespace fp4gemm::cli
