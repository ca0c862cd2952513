// serve_moe(): the per-call path, as the dense runner's serve() (src/dispatch/fallback.cpp): try
// the plan's candidates in order; the first that completes wins. A failure is warned once per
// backend and problem, remembered so later calls skip that backend for that problem, and the next
// candidate re-runs the whole layer into `out`. A wrong answer in the canary quarantines the backend.
#include "dispatch/runner_pieces.hpp"
#include "moe/moe_runner_state.hpp"
#include "moe/moe_staging.hpp"

namespace fp4gemm::moe {
namespace {

// none when the backend may serve, else the quarantine reason (the canary runs once per key).
std::optional<std::string> ensure_canary(MoeRunnerState& state, MoeBackendSlot& slot, const MoeProblem& problem) {
  const std::string name = slot.backend->name();
  const std::string key = moe_canary_key(name, problem);
  {
    std::lock_guard<std::mutex> lock(state.mutex);
    if (auto found = state.quarantine.find(name); found != state.quarantine.end()) return found->second;
    if (state.canary_passed.count(key)) return std::nullopt;
  }
  CanaryReport report;
  {
    std::lock_guard<std::mutex> run_lock(slot.run_mutex);
    report = run_moe_canary(*slot.backend, state.device_for(*slot.backend), problem);
  }
  std::lock_guard<std::mutex> lock(state.mutex);
  if (report.passed) {
    state.canary_passed.insert(key);
    return std::nullopt;
  }
  state.quarantine[name] = report.reason;
  return report.reason;
}

}  // namespace

void serve_moe(MoeRunnerState& state, const MoeCall& call, MoeLayerState& layer, const MutableDenseView& out,
               const RunContext& context, const MoeProblem& problem) {
  if (call.x.memory == Memory::cuda && !state.primary.is_cuda()) {
    throw Error(ErrorCode::unsupported, "the MoE operands are in GPU memory but this runner runs on " +
                                            state.primary.to_string() + " only: pass x and the output in host memory, "
                                            "or make the runner on the GPU");
  }
  MoePlan plan;
  {
    std::lock_guard<std::mutex> lock(state.mutex);
    plan = moe_plan_for(state, problem);
  }
  if (plan.order.empty()) {
    throw Error(ErrorCode::unsupported, "cannot run the MoE layer " + problem.to_string() + ": " +
                                            plan.explanation.choice_reason);
  }
  std::string causes;
  const auto note = [&](const std::string& cause) { causes += (causes.empty() ? "" : "; ") + cause; };
  for (const std::string& name : plan.order) {
    MoeBackendSlot& slot = *state.find(name);
    if (state.options.canary) {
      if (const auto quarantine = ensure_canary(state, slot, problem)) {
        state.warn_once("quarantine:" + name, "MoE backend '" + name + "' is quarantined: its canary " + *quarantine +
                                                  "; it will not serve in this runner");
        note(name + ": quarantined (" + *quarantine + ")");
        if (plan.strict) break;
        continue;
      }
    }
    std::exception_ptr failure;
    try {
      std::lock_guard<std::mutex> run_lock(slot.run_mutex);
      const DeviceInfo& device = state.device_for(*slot.backend);
      const auto prepared = layer.layout_for(*slot.backend, device);
      // Operands in the other memory are staged (copied there and back), as the dense runner does.
      const int gpu = device.is_cuda() ? device.index : call.x.device;
      run_moe_in_backend_memory(*slot.backend, *prepared, call, out, context, gpu, /*carry_output=*/false);
      return;
    } catch (const Error& error) {
      if (error.code() == ErrorCode::unrecoverable) throw;
      failure = std::current_exception();
    } catch (...) {
      failure = std::current_exception();
    }
    const std::string cause = dispatch::describe_failure(failure);
    {
      std::lock_guard<std::mutex> lock(state.mutex);
      state.failures[moe_failure_key(name, problem)] = cause;
    }
    note(name + ": " + cause);
    state.warn_once("failure:" + moe_failure_key(name, problem),
                    "MoE backend '" + name + "' failed on " + problem.to_string() + ": " + cause +
                        (plan.strict ? "" : "; using the next candidate for this problem from now on"));
    if (plan.strict) break;
  }
  if (plan.strict) {
    throw Error(ErrorCode::backend_failure, "MoE backend '" + plan.order.front() + "', requested by " +
                                                state.setting.origin + ", cannot run " + problem.to_string() + " (" +
                                                causes + "); an explicitly chosen backend is not replaced by another: "
                                                         "choose another backend or unset the choice to let auto fall back");
  }
  throw Error(ErrorCode::backend_failure, "every candidate MoE backend failed on " + problem.to_string() + ": " + causes);
}

std::shared_ptr<const PreparedMoe> MoeLayerState::layout_for(MoeBackend& backend, const DeviceInfo& device) {
  std::lock_guard<std::mutex> lock(mutex);
  const std::string name = backend.name();
  if (auto found = layouts.find(name); found != layouts.end()) return found->second;
  if (auto failed = prepare_failures.find(name); failed != prepare_failures.end()) {
    throw Error(ErrorCode::backend_failure, "preparing the layer failed earlier: " + failed->second);
  }
  try {
    std::shared_ptr<const PreparedMoe> prepared = backend.prepare(weights, device);
    layouts[name] = prepared;
    return prepared;
  } catch (const std::exception& error) {
    prepare_failures[name] = error.what();
    throw;
  }
}

}  // namespace fp4gemm::moe
