#include "tune/tune.hpp"

#include <algorithm>
#include <map>
#include <tuple>

namespace fp4gemm::tune {

std::vector<Choice> choose_fastest(const std::vector<bench::Result>& results) {
  std::vector<Choice> choices;
  const auto choice_for = [&](const GemmProblem& problem) -> Choice& {
    for (Choice& choice : choices)
      if (choice.problem == problem) return choice;
    choices.push_back(Choice{problem, "", 0, "", 0, "", 0});
    return choices.back();
  };
  for (const bench::Result& result : results) {
    if (!result.ok || result.floor) continue;
    Choice& choice = choice_for(result.problem);
    // A backend that keeps a dense copy of the weight is a comparison, like a peer: the runner
    // would pass over a profile entry naming it.
    if (result.peer || result.dense_copy) {
      if (choice.fastest_peer.empty() || result.time_us < choice.fastest_peer_us) {
        choice.fastest_peer = result.backend;
        choice.fastest_peer_us = result.time_us;
      }
    } else if (choice.backend.empty() || result.time_us < choice.time_us) {
      choice.runner_up = choice.backend;
      choice.runner_up_us = choice.time_us;
      choice.backend = result.backend;
      choice.time_us = result.time_us;
    } else if (choice.runner_up.empty() || result.time_us < choice.runner_up_us) {
      choice.runner_up = result.backend;
      choice.runner_up_us = result.time_us;
    }
  }
  std::erase_if(choices, [](const Choice& choice) { return choice.backend.empty(); });  // only peers ran
  return choices;
}

dispatch::TunedProfile make_profile(const std::vector<Choice>& choices, const dispatch::ProfileMetadata& metadata) {
  dispatch::TunedProfile profile;
  profile.origin = "<tuned>";
  profile.metadata = metadata;
  // (n, k, activation) -> M -> winner; a later duplicate of a problem replaces an earlier one.
  std::map<std::tuple<std::int64_t, std::int64_t, ActivationType>, std::map<std::int64_t, std::string>> winners;
  for (const Choice& choice : choices)
    winners[{choice.problem.n, choice.problem.k, choice.problem.activation}][choice.problem.m] = choice.backend;
  for (const auto& [shape, by_m] : winners) {
    const auto& [n, k, activation] = shape;
    for (auto it = by_m.begin(); it != by_m.end(); ++it) {
      const auto next = std::next(it);
      if (next != by_m.end() && next->second == it->second) continue;  // the run goes on
      profile.entries.push_back(dispatch::ProfileEntry{it->first, n, k, activation, it->second});
    }
  }
  return profile;
}

}  // namespace fp4gemm::tune
