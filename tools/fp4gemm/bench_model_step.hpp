#pragma once
// `fp4gemm bench --config config.json --tokens 1,8,64 [--tp N] [--ep N]`: one decode step of the
// model from measurements — every NVFP4 GEMM shape and the MoE layer timed once per token count,
// multiplied by how many layers run it — with the share of each layer kind, the GEMM-only tokens/s
// ceiling per sequence and per batch, and the same step with each peer.
#include <cstdint>
#include <string>
#include <vector>

namespace fp4gemm::cli {

struct ModelStepRequest {
  std::string config;
  int tp = 1, ep = 1;
  std::vector<std::int64_t> tokens;
  std::string backend;
  std::string device;
  bool json = false;
  bool no_peers = false;
};

void run_model_step_report(const ModelStepRequest& request);

}  // namespace fp4gemm::cli
