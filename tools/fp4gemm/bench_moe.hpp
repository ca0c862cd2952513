#pragma once
// `fp4gemm bench --moe` and the MoE part of `fp4gemm bench --config --tokens`: an MoE layer timed
// at several token counts through the MoE runner (moe_execution.hpp) beside its peers (OpenBLAS on
// the CPU; cuBLAS BF16 grouped and cuBLASLt FP8 on a GPU, bench/moe_gpu_bench.hpp), against the
// roofline of the experts the routing touches (bench/moe_report.hpp).
#include <cstdint>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "bench/bench.hpp"
#include "bench/moe_bench.hpp"

namespace fp4gemm::cli {

// The routing seed of every MoE bench: the same tokens go to the same experts in every run.
inline constexpr std::uint64_t kMoeRoutingSeed = 2026;

// The layer's shape from a model's config.json (or directory): its routed experts per GPU (--tp
// splits their intermediate size, --ep their count) and its shared expert.
bench::MoeBenchShape moe_shape_from_config(const std::string& config, int tp, int ep);

struct MoeTimings {
  std::vector<bench::MoeResult> results;  // per token count: ours, ours routed by the router (when asked), then the peer
};

// Times `layer` at each token count with uniform random routing given, and with `include_routed`
// also the whole layer routed by its router on random x (bench::routed_draws). `backend`: an MoE
// backend or "" (the runner's choice).
MoeTimings time_moe_layer(const bench::MoeBenchLayer& layer, const std::vector<std::int64_t>& tokens, const std::string& backend,
                          bool include_peers, bool include_routed = true);

// The same on `device`: on a GPU the runner's backend there beside the GPU peers
// (bench/moe_gpu_bench.hpp), on the CPU time_moe_layer. A GPU in a build without CUDA is an error.
MoeTimings time_moe_layer_on(const DeviceInfo& device, const bench::MoeBenchLayer& layer,
                             const std::vector<std::int64_t>& tokens, const std::string& backend, bool include_peers,
                             bool include_routed = true);

struct MoeBenchRequest {
  bench::MoeBenchShape shape;
  std::vector<std::int64_t> tokens;
  std::string backend;
  std::string device;
  bool json = false;
  bool no_peers = false;
};
void run_moe_bench(const MoeBenchRequest& request);

// --experts, --topk, --hidden and --intermediate into `shape`: each needs `moe_flag` and excludes
// `config` (bench --moe and tune --moe).
void add_moe_layer_options(CLI::App* command, bench::MoeBenchShape& shape, CLI::Option* moe_flag, CLI::Option* config);

}  // namespace fp4gemm::cli
