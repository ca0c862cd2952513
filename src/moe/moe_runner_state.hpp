#pragma once
// The MoE runner's private state, shared by the files of src/moe/ that make up MoeRunner
// (moe_runner.cpp, moe_resolution.cpp, moe_serve.cpp, moe_canary.cpp). The pieces mirror the
// dense runner's (src/dispatch/runner_state.hpp): slots with a run lock per backend, quarantine
// by canary, failures remembered per problem. Everything mutable is guarded by `mutex` unless noted.
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "dispatch/log.hpp"
#include "dispatch/runner_pieces.hpp"
#include "fp4gemm/moe/moe_runner.hpp"

namespace fp4gemm::moe {

struct MoeBackendSlot {
  std::shared_ptr<MoeBackend> backend;
  // NOTE: MoeBackend::run is not const and may use per-instance state: one thread per backend
  // instance at a time (prepare, run and canary all hold this lock, before a layer's lock).
  std::mutex run_mutex;
};

struct MoeRunnerState {
  std::uint64_t id = 0;  // distinguishes runners so a MoeLayerHandle is used with its own
  MoeRunnerOptions options;
  dispatch::LogSink log;
  DeviceInfo host, primary;
  dispatch::BackendSetting setting;
  dispatch::LoadedProfile profile;
  std::vector<std::unique_ptr<MoeBackendSlot>> backends;

  mutable std::mutex mutex;
  std::map<std::string, std::string> quarantine;  // backend -> canary failure
  std::set<std::string> canary_passed;            // moe_canary_key()
  std::map<std::string, std::string> failures;    // moe_failure_key() -> cause
  dispatch::OnceLog once;

  MoeBackendSlot* find(const std::string& name) const;
  const DeviceInfo& device_for(const MoeBackend& backend) const;
  std::vector<std::string> backend_names() const;
  void warn_once(const std::string& key, const std::string& message);
};

std::string moe_failure_key(const std::string& backend, const MoeProblem& problem);

// The candidate list of one problem with its explain trail. Callers hold state.mutex.
struct MoePlan {
  MoeExplanation explanation;
  std::vector<std::string> order;  // backends to try, in order
  bool strict = false;             // an explicit request: no fallback to other backends
};
MoePlan moe_plan_for(const MoeRunnerState& state, const MoeProblem& problem);

// The canary: a small random layer with the served problem's operand types, routing and shared
// expert, run on `backend` into a poisoned output and judged against the FP64 oracle.
std::string moe_canary_key(const std::string& backend, const MoeProblem& problem);
CanaryReport run_moe_canary(MoeBackend& backend, const DeviceInfo& device, const MoeProblem& served);

// The shared state of a MoeLayerHandle.
struct MoeLayerState {
  std::uint64_t runner_id = 0;
  MoeWeights weights;  // borrowed views
  std::mutex mutex;
  std::map<std::string, std::shared_ptr<const PreparedMoe>> layouts;  // backend -> its layout
  std::map<std::string, std::string> prepare_failures;                 // backend -> cause
  // The layout of `backend`, made on first use; throws the preparation error, again on later calls.
  std::shared_ptr<const PreparedMoe> layout_for(MoeBackend& backend, const DeviceInfo& device);
};

// Picks a backend for the problem, proves it with a canary, runs it, and falls back on failure.
void serve_moe(MoeRunnerState& state, const MoeCall& call, MoeLayerState& layer, const MutableDenseView& out,
               const RunContext& context, const MoeProblem& problem);

}  // namespace fp4gemm::moe
