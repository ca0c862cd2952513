// Resolution: the ordered candidate list of one problem, each with ok or the reason it is passed
// over. Enumerate (requested backend, or profile entry then the family's preference row) ->
// filter (compiled in, checks, quarantine, earlier failure) -> the first ok candidate is the choice.
#include <algorithm>

#include "dispatch/runner_state.hpp"
#include "dispatch/preference.hpp"
#include "fp4gemm/format/nvfp4_matrix.hpp"

namespace fp4gemm::dispatch {
namespace {

CandidateReport assess(const RunnerState& state, const std::string& name, const std::string& origin,
                       const GemmProblem& problem) {
  CandidateReport report;
  report.backend = name;
  report.origin = origin;
  const BackendSlot* slot = state.find(name);
  if (slot == nullptr) {
    report.checked_on.clear();
#ifdef FP4GEMM_WITH_CUDA
    report.reason = "not compiled into this build";
#else
    report.reason = "not compiled into this build (it was configured without CUDA: FP4GEMM_CUDA=OFF or no nvcc)";
#endif
    return report;
  }
  const DeviceInfo& device = state.device_for(*slot->backend);
  report.checked_on = device.to_string();
  const CheckResult check = slot->backend->check(problem, device);
  if (!check) {
    report.reason = check.reason;
    return report;
  }
  // NOTE: NVFP4 exists so that a model fits; a backend that keeps a dense copy of every weight
  // (3.6x the NVFP4 bytes as BF16) serves only when named, never from the auto order or a profile.
  if (origin != "requested") {
    const WeightResidency residency = slot->backend->residency(problem.n, problem.k);
    if (residency.dense_copy) {
      report.reason = "keeps " + residency.layout + ": " + std::to_string(residency.bytes >> 20) + " MiB for this " +
                      std::to_string(problem.n) + "x" + std::to_string(problem.k) + " weight against " +
                      std::to_string(std::int64_t(double(problem.n) * double(problem.k) * kNvfp4BytesPerElement) >> 20) +
                      " MiB in NVFP4; auto never picks a backend that keeps a dense copy: name it to trade memory for speed";
      return report;
    }
  }
  // The backend's own quarantine, or that of the kernel this problem takes (its others still serve).
  if (auto quarantine = state.quarantine_for(name, slot->backend->kernel_name(problem, device))) {
    report.reason = "quarantined: its canary failed: " + quarantine->reason;
    return report;
  }
  if (auto failed = state.failures.find(failure_key(name, problem)); failed != state.failures.end()) {
    report.reason = "failed earlier for this problem: " + failed->second;
    return report;
  }
  report.ok = true;
  return report;
}

// Fills explanation.profile; returns the entry's backend when it should lead the order.
std::string consult_profile(const RunnerState& state, const GemmProblem& problem, Explanation& explanation) {
  ProfileReport& report = explanation.profile;
  if (!profile_applies(state.profile, report)) return "";
  const TunedProfile& profile = *state.profile.profile;
  const ProfileEntry* entry = profile.find(problem);
  if (entry == nullptr) {
    report.detail = "tuned profile '" + profile.origin + "' has no entry for n=" + std::to_string(problem.n) +
                    " k=" + std::to_string(problem.k) + " a=" + to_string(problem.activation) +
                    " with m_max >= " + std::to_string(problem.m);
    return "";
  }
  report.backend = entry->backend;
  const CandidateReport check = assess(state, entry->backend, "profile", problem);
  if (!check.ok) {
    report.detail = "entry m_max=" + std::to_string(entry->m_max) + " names '" + entry->backend +
                    "', which cannot serve now (" + check.reason + "); using the auto order";
    return "";
  }
  report.hit = true;
  report.detail = "tuned profile '" + profile.origin + "' entry m_max=" + std::to_string(entry->m_max) + " picks '" +
                  entry->backend + "'";
  return entry->backend;
}

}  // namespace

Plan plan_for(const RunnerState& state, const GemmProblem& problem) {
  Plan plan;
  Explanation& explanation = plan.explanation;
  explanation.problem = problem;
  explanation.device = state.primary.to_string();
  explanation.host_device = state.host.to_string();
  const ArchFamily family = family_of(state.primary);
  explanation.family = to_string(family);
  explanation.setting = state.setting.backend.empty() ? "auto" : state.setting.backend;
  explanation.setting_origin = state.setting.source == SettingSource::none ? "default" : state.setting.origin;

  if (state.setting.is_explicit()) {
    plan.strict = true;
    explanation.profile.detail = "not consulted: the backend was chosen explicitly";
    explanation.candidates.push_back(assess(state, state.setting.backend, "requested", problem));
  } else {
    const std::string profile_choice = consult_profile(state, problem, explanation);
    if (!profile_choice.empty()) explanation.candidates.push_back(assess(state, profile_choice, "profile", problem));
    const std::vector<std::string>* order = &state.options.auto_order;
    if (order->empty()) {
      const PreferenceRow& row = preference_for(family, problem.m, problem.n, problem.k);
      explanation.order_evidence = row.evidence;
      order = &row.order;
    }
    for (const auto& name : *order)
      if (name != profile_choice) explanation.candidates.push_back(assess(state, name, "auto order", problem));
  }

  for (const auto& candidate : explanation.candidates)
    if (candidate.ok) plan.order.push_back(candidate.backend);

  // Every other compiled-in backend is listed too (never tried), so `explain` answers "why not X?"
  // for any X — e.g. cublaslt on an H200, which is in no SM 9.0 order.
  for (const std::string& name : state.backend_names()) {
    const bool listed = std::any_of(explanation.candidates.begin(), explanation.candidates.end(),
                                    [&](const CandidateReport& c) { return c.backend == name; });
    if (listed) continue;
    CandidateReport report = assess(state, name, plan.strict ? "not requested" : "not in this family's order", problem);
    if (report.ok) {
      report.ok = false;
      report.reason = plan.strict ? "passes its checks, but another backend was requested"
                                  : "passes its checks, but is not ranked for " + explanation.family;
    }
    explanation.candidates.push_back(report);
  }

  if (!plan.order.empty()) {
    const CandidateReport& chosen = *std::find_if(explanation.candidates.begin(), explanation.candidates.end(),
                                                  [](const CandidateReport& c) { return c.ok; });
    explanation.choice = chosen.backend;
    if (chosen.origin == "requested") {
      explanation.choice_reason = "requested by " + state.setting.origin + " and its checks pass";
    } else if (chosen.origin == "profile") {
      explanation.choice_reason = "the tuned profile's entry for this problem";
    } else {
      explanation.choice_reason = "first candidate of the " + explanation.family + " preference order whose checks pass";
    }
    if (state.primary.is_cuda() && state.find(chosen.backend)->backend->memory() == Memory::host) {
      explanation.choice_reason += "; it runs on the host, so operands in GPU memory are staged through host memory";
    }
  } else if (plan.strict) {
    explanation.choice_reason = "backend '" + state.setting.backend + "' was requested by " + state.setting.origin +
                                " but cannot serve this problem: " + explanation.candidates.front().reason;
  } else {
    explanation.choice_reason = "no candidate can serve this problem (reasons above)";
  }

  const BackendSlot* chosen_slot = explanation.choice.empty() ? nullptr : state.find(explanation.choice);
  const DeviceInfo& roofline_device = chosen_slot ? state.device_for(*chosen_slot->backend) : state.primary;
  explanation.roofline = estimate_roofline(problem, roofline_device, explanation.choice == "cublaslt");
  if (chosen_slot != nullptr) explanation.kernel = chosen_slot->backend->kernel_plan(problem, roofline_device);
  return plan;
}

}  // namespace fp4gemm::dispatch
