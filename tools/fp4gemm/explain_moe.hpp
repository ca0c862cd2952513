#pragma once
// `fp4gemm explain --moe`: which MoE backend would serve a layer of T tokens on this machine (or on
// a simulated GPU) and why, and the chosen backend's plan: the kernels each step runs, their grids
// and the rules that picked them (on a GPU they change with T). No layer is made and nothing runs.
#include <cstdint>
#include <string>

#include "bench/moe_bench.hpp"

namespace fp4gemm::cli {

struct MoeExplainRequest {
  bench::MoeBenchShape shape;
  std::int64_t tokens = 1;
  bool routing_given = false;  // else the layer's router routes x (the whole layer)
  std::string backend, device, profile;
  int simulate_sm = 0;
  int simulate_cublaslt = 0;
  bool json = false;
};

void run_moe_explain(const MoeExplainRequest& request);

}  // namespace fp4gemm::cli
