#pragma once
// `fp4gemm bench --moe` on a GPU: the MoE layer the runner serves there, beside the peers
// cublas_bf16_grouped and cublaslt_fp8 (moe_gpu_peers.hpp), all on the same x and the same
// uniform random routing draws, each checked once against `ref` on a few tokens (moe_peer_plan.hpp)
// and timed as CUDA-graph replays of calls that cycle through the draws (medians).
// No CUDA types here: the CLI includes it in every build.
#include <cstdint>
#include <string>
#include <vector>

#include "bench/moe_bench.hpp"

namespace fp4gemm::bench {

// Tokens of each call checked against `ref` (the FP64 oracle costs tens of ms per token at the
// 512-expert shape): first, last and evenly between (check_tokens).
inline constexpr int kMoeCheckTokens = 4;

#ifdef FP4GEMM_WITH_CUDA
struct GpuMoeBenchRequest {
  int device = 0;
  std::vector<std::int64_t> tokens;
  std::string backend;  // an MoE backend, "auto" or "": the runner's choice
  bool include_peers = true;
  std::uint64_t routing_seed = 0;
  bool include_routed = true;  // also the whole layer routed by its router (bench::routed_draws)
};

// Per token count: ours (the backend the MoE runner serves; x, routing and output in device memory
// when that backend's memory is cuda, else in host memory timed as the CPU bench does), ours routed
// by the layer's router on each draw's own x (MoeResult::routed), then each peer.
std::vector<MoeResult> bench_moe_gpu(const MoeBenchLayer& layer, const GpuMoeBenchRequest& request);
#endif

}  // namespace fp4gemm::bench
