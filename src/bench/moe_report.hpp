#pragma once
// What `fp4gemm bench --moe` reports about each timed layer: its roofline (the bytes of the experts
// the routing touches, x and y over the measured bandwidth, or the FLOPs over the measured compute
// rate, the larger), our time over it, each peer's time over ours, and the --json line that holds them.
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/bench.hpp"
#include "bench/moe_bench.hpp"

namespace fp4gemm::bench {

// moe::MoeProblem's minimal bytes of a BF16 call on a layer of `shape` (its shared expert NVFP4):
// each of `active_experts` once (gate, up, down at 0.5625 B/element), the shared expert, x, y and,
// when `routed` (the layer's router ran), the router (FP32, as the backends hold it); and its FLOPs
// (2·T·k·3·H·I plus the shared expert, plus 2·T·E·H when routed).
double moe_touched_bytes(const MoeBenchShape& shape, std::int64_t tokens, std::int64_t active_experts, bool routed = false);
double moe_layer_flops(const MoeBenchShape& shape, std::int64_t tokens, bool routed = false);

// max(touched bytes / bandwidth, FLOPs / compute rate) in µs; 0 without ceilings.
double moe_roofline_us(const MoeBenchShape& shape, std::int64_t tokens, std::int64_t active_experts, const Ceilings& ceilings,
                       bool routed = false);

// For our (not peer) row `ours`: each ok peer of the same token count in `results`, with its
// time over ours (> 1: we are faster), in the order of `results`.
std::vector<std::pair<std::string, double>> moe_speedups(const MoeResult& ours, const std::vector<MoeResult>& results);

// The --json line of `result`: the shape, tokens, routing ("given" or "router"), active experts,
// time, touched bytes, the
// roofline with the ceilings it used, roofline_fraction (roofline / time) and times_roofline
// (time / roofline), the check against ref when one ran, and for our row "speedup_over"
// {peer: peer time / our time}.
nlohmann::json moe_json_line(const MoeBenchShape& shape, const MoeResult& result, const std::vector<MoeResult>& results,
                             const Ceilings& ceilings, const std::string& device);

}  // namespace fp4gemm::bench
