#pragma once
// The arithmetic of `fp4gemm bench --config --tokens`: a decode step as the sum of its parts (each
// distinct GEMM or MoE layer timed once, times how many layers run it), per layer kind, for our
// backends and for each peer, and the tokens per second such a step allows.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace fp4gemm::bench {

// One distinct shape of the step: its time per call and how many calls a step makes.
struct StepPart {
  std::string kind;  // "attention", "linear attention", "dense MLP", "shared expert", "MoE experts"
  std::string name;  // "self_attn.qkv_proj 12800x4096", ...
  std::int64_t count = 0;
  double ours_us = 0;                      // the fastest of our backends
  std::map<std::string, double> peer_us;   // peer name -> time per call; absent when it was not timed
};

// A step's total for one implementation ("fp4gemm" or a peer), in microseconds.
struct StepTotal {
  std::string who;
  double step_us = 0;
  std::map<std::string, double> kind_us;  // the total split by StepPart::kind
  std::vector<std::string> missing;       // parts this peer did not time (their time is left out)
  bool complete() const { return missing.empty(); }
};

// Ours first, then each peer that timed at least one part, in name order.
std::vector<StepTotal> step_totals(const std::vector<StepPart>& parts);

// Tokens per second of a step that takes `step_us` for `tokens` tokens (the GEMM-only ceiling:
// attention's softmax, norms, communication and sampling are not in the step).
inline double tokens_per_second(double step_us, std::int64_t tokens) { return step_us > 0 ? double(tokens) * 1e6 / step_us : 0; }

// An MoE layer from its expert GEMMs alone, where no MoE implementation is timed: `active` experts
// each running gate_up and down on its share of the tokens (timed at that M).
inline double moe_from_expert_gemms(double active_experts, double gate_up_us, double down_us) {
  return active_experts * (gate_up_us + down_us);
}

// Rows each active expert gets on average: ceil(tokens · k / active), at least 1.
std::int64_t rows_per_active_expert(std::int64_t tokens, int top_k, double active_experts);

}  // namespace fp4gemm::bench
