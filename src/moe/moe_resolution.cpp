// Resolution of the MoE runner: enumerate (requested backend, or the auto order) -> filter
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

}  // namespace

MoePlan moe_plan_for(const MoeRunnerState& state, const MoeProblem& problem) {
  MoePlan plan;
  MoeExplanation& explanation = plan.explanation;
  explanation.problem = problem;
  explanation.device = state.primary.to_string();
  explanation.setting = state.setting.backend.empty() ? "auto" : state.setting.backend;
  explanation.setting_origin = state.setting.source == dispatch::SettingSource::none ? "default" : state.setting.origin;
  // NOTE: tuned profiles (dispatch/profile.hpp) key entries by one GEMM's n, k and activation;
  // an MoE entry needs E, k, H, I and the token count, which the format does not have yet.
  explanation.profile = "not consulted: tuned profiles hold GEMM entries only, none for MoE layers";

  if (state.setting.is_explicit()) {
    plan.strict = true;
    explanation.candidates.push_back(assess(state, state.setting.backend, "requested", problem));
  } else {
    const MoePreference& preference = moe_preference_for(dispatch::family_of(state.primary));
    explanation.order_evidence = preference.evidence;
    for (const auto& name : preference.order) explanation.candidates.push_back(assess(state, name, "auto order", problem));
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
  text += "profile:  " + profile + "\n";
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
