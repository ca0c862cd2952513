#pragma once
// The CLI's one seam to the MoE layer: a layer prepared for moe::MoeRunner as the bench's call.
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
  std::function<std::string()> plan;         // how it served the last call (the backend's plan)
};

// `weights` (kept alive by the caller) through moe::MoeRunner with `backend` ("" or "auto": the
// runner's choice, which `profile_path` may lead) on the CPU; the returned call passes the routing
// it is given.
PreparedMoeCall prepare_moe_call(const moe::MoeWeights& weights, const std::string& backend, const moe::MoeOptions& options,
                                 const std::string& profile_path = "");

}  // namespace fp4gemm::cli
