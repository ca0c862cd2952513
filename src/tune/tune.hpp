#pragma once
// The tuner's decisions, from a benchmark run: the fastest of our backends for each problem, and
// the tuned profile (dispatch/profile.hpp) that makes the runner pick it.
#include <string>
#include <vector>

#include "bench/bench.hpp"
#include "fp4gemm/dispatch/profile.hpp"

namespace fp4gemm::tune {

struct Choice {
  GemmProblem problem;
  std::string backend;       // the fastest of our backends
  double time_us = 0;
  std::string runner_up;     // the second fastest, or empty when only one ran
  double runner_up_us = 0;
  std::string fastest_peer;  // the fastest peer library (cuBLAS BF16, cuBLASLt FP8, OpenBLAS) or dense-copy backend, or empty
  double fastest_peer_us = 0;
};

// For every problem with at least one of our backends timed: the fastest of them. Peers and the
// stream floor never win (they are not NVFP4 backends); failed rows are skipped. In the order the
// problems first appear.
std::vector<Choice> choose_fastest(const std::vector<bench::Result>& results);

// The profile of `choices`: per weight shape and activation type, M ascending, one entry per run
// of consecutive Ms with the same winner, its m_max the run's largest M. The runner then serves an
// M between two tuned ones with the winner of the next larger tuned M, and an M past the largest
// with its auto order.
dispatch::TunedProfile make_profile(const std::vector<Choice>& choices, const dispatch::ProfileMetadata& metadata);

}  // namespace fp4gemm::tune
