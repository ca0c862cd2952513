#include "bench/moe_report.hpp"

#include <algorithm>
#include <cmath>

#include "fp4gemm/moe/moe_layer.hpp"

namespace fp4gemm::bench {
namespace {

// A BF16 call on a bench layer of `shape`, routed by its router or with given routing.
moe::MoeProblem bench_problem(const MoeBenchShape& shape, std::int64_t tokens, bool routed) {
  return {tokens, shape.hidden, shape.intermediate, shape.experts, shape.top_k, ActivationType::bf16, DType::bf16, !routed,
          shape.shared_intermediate > 0, shape.shared_intermediate, false};
}

}  // namespace

double moe_touched_bytes(const MoeBenchShape& shape, std::int64_t tokens, std::int64_t active_experts, bool routed) {
  return bench_problem(shape, tokens, routed).minimal_bytes(active_experts);
}

double moe_layer_flops(const MoeBenchShape& shape, std::int64_t tokens, bool routed) {
  return bench_problem(shape, tokens, routed).flops();
}

double moe_roofline_us(const MoeBenchShape& shape, std::int64_t tokens, std::int64_t active_experts, const Ceilings& ceilings,
                       bool routed) {
  if (ceilings.bandwidth_gbps <= 0 || ceilings.compute_tflops <= 0) return 0;
  const double memory_us = moe_touched_bytes(shape, tokens, active_experts, routed) / (ceilings.bandwidth_gbps * 1e9) * 1e6;
  const double compute_us = moe_layer_flops(shape, tokens, routed) / (ceilings.compute_tflops * 1e12) * 1e6;
  return std::max(memory_us, compute_us);
}

std::vector<std::pair<std::string, double>> moe_speedups(const MoeResult& ours, const std::vector<MoeResult>& results) {
  std::vector<std::pair<std::string, double>> speedups;
  if (ours.peer || !ours.ok || !(ours.time_us > 0)) return speedups;
  for (const MoeResult& other : results)
    if (other.peer && other.ok && other.tokens == ours.tokens) speedups.push_back({other.name, other.time_us / ours.time_us});
  return speedups;
}

nlohmann::json moe_json_line(const MoeBenchShape& shape, const MoeResult& result, const std::vector<MoeResult>& results,
                             const Ceilings& ceilings, const std::string& device) {
  nlohmann::json line{{"device", device},
                      {"moe", true},
                      {"backend", result.name},
                      {"peer", result.peer},
                      {"routing", result.routed ? "router" : "given"},
                      {"tokens", result.tokens},
                      {"experts", shape.experts},
                      {"top_k", shape.top_k},
                      {"hidden", shape.hidden},
                      {"intermediate", shape.intermediate},
                      {"shared_intermediate", shape.shared_intermediate},
                      {"active_experts", result.active_experts},
                      {"touched_bytes", moe_touched_bytes(shape, result.tokens, result.active_experts, result.routed)},
                      {"flops", moe_layer_flops(shape, result.tokens, result.routed)},
                      {"bandwidth_gbps", ceilings.bandwidth_gbps},
                      {"compute_tflops", ceilings.compute_tflops},
                      {"ok", result.ok},
                      {"note", result.note}};
  if (!result.kernel.empty()) line["kernel"] = result.kernel;
  if (result.checked_tokens > 0) {
    line["checked_tokens"] = result.checked_tokens;
    // JSON has no infinity: a non-finite error (NaN or Inf in the output) is written as null.
    line["relative_error"] = std::isfinite(result.relative_error) ? nlohmann::json(result.relative_error) : nlohmann::json(nullptr);
  }
  if (!result.ok) return line;
  line["time_us"] = result.time_us;
  line["spread"] = result.spread;
  line["repeats"] = result.repeats;
  const double roofline = moe_roofline_us(shape, result.tokens, result.active_experts, ceilings, result.routed);
  if (roofline > 0) {
    line["roofline_us"] = roofline;
    line["roofline_fraction"] = roofline / result.time_us;
    line["times_roofline"] = result.time_us / roofline;
  }
  const auto speedups = moe_speedups(result, results);
  if (!speedups.empty()) {
    nlohmann::json over = nlohmann::json::object();
    for (const auto& [peer, ratio] : speedups) over[peer] = ratio;
    line["speedup_over"] = over;
  }
  return line;
}

}  // namespace fp4gemm::bench
