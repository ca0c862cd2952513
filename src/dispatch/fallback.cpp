// serve(): the per-call path. Try the plan's candidates in order; the first that completes wins.
// A failure (exception from prepare or run: CUDA error, library status, OOM, anything) is warned
// once per backend+problem, remembered so later calls skip that backend for that problem, and the
// next candidate re-runs the whole GEMM into `out`, overwriting whatever the failed attempt left.
// A sticky CUDA error (ErrorCode::unrecoverable) is rethrown at once: nothing can run after it.
#include "dispatch/runner_pieces.hpp"
#include "dispatch/runner_state.hpp"
#include "dispatch/staging.hpp"

namespace fp4gemm::dispatch {
namespace {

// Runs the canary of the kernel `slot` takes for `problem` unless it already passed for these
// operand types. Returns none when the backend may serve the problem, else the quarantine that
// stops it: the backend's own, or that kernel's (its other kernels still serve).
std::optional<RunnerState::Quarantine> ensure_canary(RunnerState& state, BackendSlot& slot, const GemmProblem& problem) {
  const std::string name = slot.backend->name();
  const DeviceInfo& device = state.device_for(*slot.backend);
  const std::string kernel = slot.backend->kernel_name(problem, device);
  const std::string key = canary_key(name, kernel, problem.activation, problem.output);
  {
    std::lock_guard<std::mutex> lock(state.mutex);
    if (auto quarantine = state.quarantine_for(name, kernel)) return quarantine;
    if (state.canary_passed.count(key)) return std::nullopt;
  }
  CanaryReport report;
  {
    std::lock_guard<std::mutex> run_lock(slot.run_mutex);
    report = run_canary(*slot.backend, device, state.primary.index, problem);
  }
  // NOTE: a kernel no canary problem within the cost cap reaches is recorded as proven (or
  // quarantined) by the kernel that ran instead, so its canary does not run again on every call.
  if (report.passed && !report.coverage_gap.empty()) {
    state.warn_once("canary gap:" + quarantine_key(name, kernel),
                    "backend '" + name + "': " + report.coverage_gap + "; that kernel serves without a canary of its own");
  }
  std::lock_guard<std::mutex> lock(state.mutex);
  if (report.passed) {
    state.canary_passed.insert(key);
    return std::nullopt;
  }
  const RunnerState::Quarantine quarantine{quarantine_key(name, kernel), report.reason};
  state.quarantine[quarantine.key] = quarantine.reason;
  ++state.generation;
  return quarantine;
}

}  // namespace

std::string describe_failure(const std::exception_ptr& failure) {
  try {
    std::rethrow_exception(failure);
  } catch (const std::bad_alloc&) {
    return "ran out of host memory (std::bad_alloc)";
  } catch (const std::exception& error) {
    return error.what();
  } catch (...) {
    return "threw an exception that is not a std::exception";
  }
}

void serve(RunnerState& state, const ActivationView& a, WeightState& weight, float alpha, const MutableDenseView& out,
           const RunContext& context, const GemmProblem& problem) {
  RunnerState::CachedPlan plan;
  {
    std::lock_guard<std::mutex> lock(state.mutex);
    const RunnerState::ProblemKey key{problem.m, problem.n, problem.k, problem.activation, problem.output};
    auto cached = state.plans.find(key);
    if (cached == state.plans.end() || cached->second.generation != state.generation) {
      const Plan fresh = plan_for(state, problem);
      cached = state.plans.insert_or_assign(key, RunnerState::CachedPlan{state.generation, fresh.order, fresh.strict,
                                                                         fresh.explanation.choice_reason})
                   .first;
    }
    plan = cached->second;
  }
  if (plan.order.empty()) throw Error(ErrorCode::unsupported, "cannot run " + problem.to_string() + ": " +
                                                                  plan.no_candidate_reason +
                                                                  "; run `fp4gemm explain` with this shape for details");
  std::string causes;
  for (const std::string& name : plan.order) {
    BackendSlot& slot = *state.find(name);
    if (state.options.canary) {
      if (const auto quarantine = ensure_canary(state, slot, problem)) {
        const bool whole_backend = quarantine->key == name;
        state.warn_once("quarantine:" + quarantine->key,
                        (whole_backend ? "backend '" : "'") + quarantine->key + "' is quarantined: its canary " +
                            quarantine->reason +
                            (whole_backend ? "; it will not serve in this runner"
                                           : "; problems that take this kernel go to the next candidate in this runner"));
        causes += (causes.empty() ? "" : "; ") + quarantine->key + ": quarantined (" + quarantine->reason + ")";
        if (plan.strict) break;
        continue;
      }
    }
    std::exception_ptr failure;
    try {
      const DeviceInfo& device = state.device_for(*slot.backend);
      // Preparation too runs under the backend's lock: prepare() may share handles with run().
      std::lock_guard<std::mutex> run_lock(slot.run_mutex);
      const auto layout = weight.layout_for(*slot.backend, device, state.primary.index);
      run_with_staging(*slot.backend, a, *layout, alpha, out, context, state.primary.index);
      return;
    } catch (const Error& error) {
      if (error.code() == ErrorCode::unrecoverable) throw;
      failure = std::current_exception();
    } catch (...) {
      failure = std::current_exception();
    }
    const std::string cause = describe_failure(failure);
    {
      std::lock_guard<std::mutex> lock(state.mutex);
      state.failures[failure_key(name, problem)] = cause;
      ++state.generation;
    }
    causes += (causes.empty() ? "" : "; ") + name + ": " + cause;
    state.warn_once("failure:" + failure_key(name, problem),
                    "backend '" + name + "' failed on " + problem.to_string() + ": " + cause +
                        (plan.strict ? "" : "; using the next candidate for this problem from now on"));
    if (plan.strict) break;
  }
  if (plan.strict) {
    throw Error(ErrorCode::backend_failure, "backend '" + plan.order.front() + "', requested by " + state.setting.origin +
                                                ", failed on " + problem.to_string() + " (" + causes +
                                                "); an explicitly chosen backend is not replaced by another: "
                                                "choose another backend or unset the choice to let auto fall back");
  }
  throw Error(ErrorCode::backend_failure, "every candidate backend failed on " + problem.to_string() + ": " + causes);
}

}  // namespace fp4gemm::dispatch
