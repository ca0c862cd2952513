#pragma once
// The MoE runner: what an application holds to run MoE layers. It chooses an MoE backend the way
// the dense Runner chooses a GEMM backend — argument / --moe-backend > FP4GEMM_MOE_BACKEND > auto
// order filtered by each backend's checks — proves it with a canary against `ref` before it first
// serves, falls back to the next candidate when one fails, and explains the choice. Without an
// explicit backend, the tuned profile's "moe" entry for the layer (dispatch/profile.hpp) leads
// the auto order, as a GEMM entry does for the dense Runner.
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fp4gemm/dispatch/backend_setting.hpp"
#include "fp4gemm/dispatch/explanation.hpp"
#include "fp4gemm/moe/moe_backend.hpp"
#include "fp4gemm/runner.hpp"

namespace fp4gemm::moe {

inline const dispatch::SettingVariables kMoeBackendVariables{"FP4GEMM_MOE_BACKEND", ""};

struct MoeRunnerOptions {
  std::string backend;  // an MoE backend name, "auto", or empty (then FP4GEMM_MOE_BACKEND, then auto)
  int device = RunnerOptions::kFirstGpu;
  std::optional<DeviceInfo> simulated_device;
  std::string profile_path;  // a tuned profile (`fp4gemm tune --moe`); its "moe" entries are used
  dispatch::LogSink log;
  dispatch::EnvironmentLookup environment;
  std::vector<std::shared_ptr<MoeBackend>> backends;  // empty: every MoE backend compiled in
  bool canary = true;
};

// What run() would do for a problem, and why (the same report shape as the dense explain).
struct MoeExplanation {
  MoeProblem problem;
  std::string device;
  std::string setting, setting_origin;
  dispatch::ProfileReport profile;  // what the tuned profile said
  std::vector<dispatch::CandidateReport> candidates;  // in the order they would be tried
  std::string order_evidence;  // why the auto order is what it is (empty when a backend was requested)
  std::string choice, choice_reason, plan;
  std::string to_text() const;
};

// A layer prepared for the runner that made it; each backend's layout is made when it first serves.
// The caller keeps the MoeWeights' buffers alive as long as the handle.
class MoeLayerHandle {
 public:
  MoeLayerHandle() = default;
  explicit operator bool() const { return state_ != nullptr; }
  std::vector<std::string> prepared_backends() const;
  std::int64_t resident_bytes() const;  // every layout made so far, together

 private:
  friend class MoeRunner;
  struct State;
  std::shared_ptr<State> state_;
};

class MoeRunner {
 public:
  explicit MoeRunner(MoeRunnerOptions options = {});
  ~MoeRunner();
  MoeRunner(const MoeRunner&) = delete;
  MoeRunner& operator=(const MoeRunner&) = delete;

  MoeLayerHandle prepare(const MoeWeights& weights);  // validates; layouts are made lazily
  // out = the layer on call.x. Throws Error like Runner::gemm; on return every element of `out`
  // is the result of one backend that completed.
  void run(const MoeCall& call, const MoeLayerHandle& layer, const MutableDenseView& out,
           const RunContext& context = {});
  MoeExplanation explain(const MoeProblem& problem) const;
  std::vector<CanaryReport> run_all_canaries();
  std::map<std::string, std::string> quarantined() const;
  const DeviceInfo& device() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// Every MoE backend compiled into this build ("ref", "cpu", and GPU ones where built).
std::vector<std::shared_ptr<MoeBackend>> make_all_moe_backends();
std::vector<std::string> moe_backend_names();

}  // namespace fp4gemm::moe
