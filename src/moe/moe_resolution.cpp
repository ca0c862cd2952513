// Resolution of the MoE runner: enumerate (requested backend, or the profile entry then the auto
// order) -> filter
// (compiled in, checks, quarantine, earlier failure) -> the first ok candidate is the choice.
#include <algorithm>

#include "moe/moe_preference.hpp"
#include "moe/moe_runner_state.hpp"

namespace fp4gemm::moe {
namespace {

dispatch::CandidateReport assess(const MoeRunnerState& state, const std::string& name, const std::string& origin,
                                 const MoeProblem& problem) {
  dispatch::CandidateReport report;
  report.backend = name;
  report.origin = origin;
  const MoeBackendSlot* slot = state.find(name);
  if (slot == nullptr) {
    report.reason = "not compiled into this build";
    return report;
  }
  const DeviceInfo& device = state.device_for(*slot->backend);
  report.checked_on = device.to_string();
  if (const CheckResult check = slot->backend->check(problem, device); !check) {
    report.reason = check.reason;
    return report;
  }
  if (auto quarantined = state.quarantine.find(name); quarantined != state.quarantine.end()) {
    report.reason = "quarantined: its canary failed: " + quarantined->second;
    return report;
  }
  if (auto failed = state.failures.find(moe_failure_key(name, problem)); failed != state.failures.end()) {
    report.reason = "failed earlier for this problem: " + failed->second;
    return report;
  }
  report.ok = true;
  return report;
}

// Fills explanation.profile; returns the entry's backend when it should lead the order. The
// sentences are the dense runner's (src/dispatch/resolution.cpp) with the MoE key.
std::string consult_profile(const MoeRunnerState& state, const MoeProblem& problem, MoeExplanation& explanation) {
  dispatch::ProfileReport& report = explanation.profile;
  if (!dispatch::profile_applies(state.profile, report)) return "";
  const dispatch::TunedProfile& profile = *state.profile.profile;
  const dispatch::MoeProfileShape shape{problem.experts, problem.top_k, problem.hidden, problem.intermediate,
                                        problem.activation};
  const dispatch::MoeProfileEntry* entry = profile.find_moe(shape, problem.tokens);
  if (entry == nullptr) {
    report.detail = "tuned profile '" + profile.origin + "' has no moe entry for E=" + std::to_string(shape.experts) +
                    " k=" + std::to_string(shape.top_k) + " H=" + std::to_string(shape.hidden) +
                    " I=" + std::to_string(shape.intermediate) + " a=" + to_string(shape.activation) +
                    " with tokens_max >= " + std::to_string(problem.tokens);
    return "";
  }
  report.backend = entry->backend;
  const dispatch::CandidateReport check = assess(state, entry->backend, "profile", problem);
  if (!check.ok) {
    report.detail = "moe entry tokens_max=" + std::to_string(entry->tokens_max) + " names '" + entry->backend +
                    "', which cannot serve now (" + check.reason + "); using the auto order";
    return "";
  }
  report.hit = true;
  report.detail = "tuned profile '" + profile.origin + "' moe entry tokens_max=" + std::to_string(entry->tokens_max) +
                  " picks '" + entry->backend + "'";
  return entry->backend;
}

}  // namespace

MoePlan moe_plan_for(const MoeRunnerState& state, const MoeProblem& problem) {
  MoePlan plan;
  MoeExplanation& explanation = plan.explanation;
  explanation.problem = problem;
  explanation.device = state.primary.to_string();
  explanation.setting = state.setting.backend.empty() ? "auto" : state.setting.backend;
  explanation.setting_origin = state.setting.source == dispatch::SettingSource::none ? "default" : state.setting.origin;
  if (state.setting.is_explicit()) {
    plan.strict = true;
    explanation.profile.detail = "not consulted: the backend was chosen explicitly";
    explanation.candidates.push_back(assess(state, state.setting.backend, "requested", problem));
  } else {
    const std::string profile_choice = consult_profile(state, problem, explanation);
    if (!profile_choice.empty()) explanation.candidates.push_back(assess(state, profile_choice, "profile", problem));
    const MoePreference& preference = moe_preference_for(dispatch::family_of(state.primary));
    explanation.order_evidence = preference.evidence;
    for (const auto& name : preference.order)
      if (name != profile_choice) explanation.candidates.push_back(assess(state, name, "auto order", problem));
  }
  for (const auto& candidate : explanation.candidates)
    if (candidate.ok) plan.order.push_back(candidate.backend);

  // Every other backend is listed too (never tried), so explain answers "why not X?".
  for (const std::string& name : state.backend_names()) {
    const bool listed = std::any_of(explanation.candidates.begin(), explanation.candidates.end(),
                                    [&](const dispatch::CandidateReport& c) { return c.backend == name; });
    if (listed) continue;
    dispatch::CandidateReport report = assess(state, name, plan.strict ? "not requested" : "not in the auto order", problem);
    if (report.ok) {
      report.ok = false;
      report.reason = plan.strict ? "passes its checks, but another backend was requested"
                                  : "passes its checks, but is not in the MoE auto order";
    }
    explanation.candidates.push_back(report);
  }

  if (!plan.order.empty()) {
    const auto& chosen = *std::find_if(explanation.candidates.begin(), explanation.candidates.end(),
                                       [](const dispatch::CandidateReport& c) { return c.ok; });
    explanation.choice = chosen.backend;
    explanation.choice_reason = chosen.origin == "requested" ? "requested by " + state.setting.origin + " and its checks pass"
                                : chosen.origin == "profile" ? "the tuned profile's moe entry for this layer"
                                                             : "first candidate of the MoE auto order whose checks pass";
    const MoeBackendSlot& slot = *state.find(chosen.backend);
    explanation.plan = slot.backend->plan(problem, state.device_for(*slot.backend));
  } else if (plan.strict) {
    explanation.choice_reason = "backend '" + state.setting.backend + "' was requested by " + state.setting.origin +
                                " but cannot serve this problem: " + explanation.candidates.front().reason;
  } else {
    explanation.choice_reason = "no candidate can serve this problem (reasons above)";
  }
  return plan;
}

std::string MoeExplanation::to_text() const {
  std::string text;
  text += "problem:  " + problem.to_string() + "\n";
  text += "device:   " + device + "\n";
  text += "setting:  " + setting + " (from " + setting_origin + ")\n";
  text += std::string("profile:  ") + (profile.hit ? "hit: " : profile.loaded ? "miss: " : "") + profile.detail + "\n";
  text += "candidates, in the order they would be tried:\n";
  for (const auto& candidate : candidates) {
    text += std::string("  ") + (candidate.ok ? "ok     " : "skip   ") + candidate.backend + " [" + candidate.origin + "]";
    if (!candidate.ok) text += ": " + candidate.reason;
    text += "\n";
  }
  if (!order_evidence.empty()) text += "order:    " + order_evidence + "\n";
  text += "choice:   " + (choice.empty() ? std::string("none") : choice) + " — " + choice_reason + "\n";
  if (!plan.empty()) text += "plan:     " + plan + "\n";
  return text;
}

}  // namespace fp4gemm::moe
