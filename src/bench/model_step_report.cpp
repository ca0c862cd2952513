#include "bench/model_step_report.hpp"

#include <algorithm>
#include <cmath>
#include <set>

namespace fp4gemm::bench {

std::vector<StepTotal> step_totals(const std::vector<StepPart>& parts) {
  std::set<std::string> peers;
  for (const StepPart& part : parts)
    for (const auto& [peer, time] : part.peer_us) peers.insert(peer);
  std::vector<StepTotal> totals{{"fp4gemm"}};
  for (const std::string& peer : peers) totals.push_back({peer});
  for (const StepPart& part : parts) {
    for (StepTotal& total : totals) {
      double time = part.ours_us;
      if (total.who != "fp4gemm") {
        const auto found = part.peer_us.find(total.who);
        if (found == part.peer_us.end()) {
          total.missing.push_back(part.name);
          continue;
        }
        time = found->second;
      }
      total.step_us += time * double(part.count);
      total.kind_us[part.kind] += time * double(part.count);
    }
  }
  return totals;
}

std::int64_t rows_per_active_expert(std::int64_t tokens, int top_k, double active_experts) {
  if (active_experts <= 0) return 1;
  return std::max<std::int64_t>(1, std::int64_t(std::ceil(double(tokens) * top_k / active_experts - 1e-9)));
}

}  // namespace fp4gemm::bench
