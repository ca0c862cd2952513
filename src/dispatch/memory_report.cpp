// explain's memory report: what the chosen backend keeps for the weight, and, under auto, what the
// backends auto picks at every M keep together (a weight served at decode and prefill sizes is held
// in each of their layouts).
#include <algorithm>

#include "dispatch/runner_state.hpp"
#include "fp4gemm/format/nvfp4_matrix.hpp"

namespace fp4gemm::dispatch {
namespace {

constexpr std::int64_t kLargestSampledM = 65536;

// M = 1, 2, 4, ... kLargestSampledM, with `m` in its place.
std::vector<std::int64_t> sampled_m(std::int64_t m) {
  std::vector<std::int64_t> values;
  for (std::int64_t value = 1; value <= kLargestSampledM; value *= 2) values.push_back(value);
  if (m > 0 && !std::binary_search(values.begin(), values.end(), m)) values.insert(std::upper_bound(values.begin(), values.end(), m), m);
  return values;
}

void add_served(std::vector<ServedRange>& served, const std::string& backend, std::int64_t m, std::int64_t bytes) {
  if (!served.empty() && served.back().backend == backend) {
    served.back().m_last = m;
    return;
  }
  served.push_back({backend, m, m, bytes});
}

}  // namespace

void report_memory(const RunnerState& state, Explanation& explanation) {
  const GemmProblem& problem = explanation.problem;
  MemoryReport& memory = explanation.memory;
  memory.nvfp4_bytes = std::int64_t(double(problem.n) * double(problem.k) * kNvfp4BytesPerElement);
  memory.bf16_bytes = problem.n * problem.k * 2;
  const BackendSlot* chosen = explanation.choice.empty() ? nullptr : state.find(explanation.choice);
  if (chosen == nullptr) return;
  const Backend& backend = *chosen->backend;
  const WeightResidency residency = backend.residency(problem.n, problem.k);
  memory.available = true;
  memory.backend = explanation.choice;
  memory.resident_bytes = residency.bytes;
  memory.memory = residency.memory == Memory::cuda ? "GPU" : "host";
  memory.layout = residency.layout;
  memory.dense_copy = residency.dense_copy;
  memory.workspace_bytes = backend.workspace_bytes(problem, state.device_for(backend));
  if (state.setting.is_explicit()) return;

  // The same weight and operand types at other M: which backend auto picks, each layout counted once.
  std::vector<std::string> counted;
  for (const std::int64_t m : sampled_m(problem.m)) {
    GemmProblem at_m = problem;
    at_m.m = m;
    const std::string choice = m == problem.m ? explanation.choice : plan_for(state, at_m).explanation.choice;
    if (choice.empty()) continue;
    const std::int64_t bytes = state.find(choice)->backend->residency(problem.n, problem.k).bytes;
    add_served(memory.served, choice, m, bytes);
    if (std::find(counted.begin(), counted.end(), choice) == counted.end()) {
      counted.push_back(choice);
      memory.served_bytes += bytes;
    }
  }
}

}  // namespace fp4gemm::dispatch
