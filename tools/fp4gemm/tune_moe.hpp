#pragma once
// `fp4gemm tune --moe`: every MoE backend timed on one MoE layer at several token counts, and the
// tuned profile's "moe" entries that make the MoE runner pick the fastest.
#include <cstdint>
#include <string>
#include <vector>

#include "bench/moe_bench.hpp"

namespace fp4gemm::cli {

struct MoeTuneRequest {
  bench::MoeBenchShape shape;
  std::vector<std::int64_t> tokens;
  std::string out;
  bool json = false;
};
void run_moe_tune(const MoeTuneRequest& request);

}  // namespace fp4gemm::cli
