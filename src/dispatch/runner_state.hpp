#pragma once
// The Runner's private state, shared by the files of src/dispatch/ (resolution, fallback, canary,
// weight handles). Everything mutable is guarded by `mutex` unless noted.
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "fp4gemm/runner.hpp"
#include "dispatch/log.hpp"
#include "dispatch/runner_pieces.hpp"

namespace fp4gemm::dispatch {

struct BackendSlot {
  std::shared_ptr<Backend> backend;
  // NOTE: Backend::run is not const and a backend may keep per-instance state (library handles
  // made at prepare, caches), so the runner never lets two threads into one backend instance at
  // once: prepare, run and canary all hold this lock (taken before a WeightState's lock).
  std::mutex run_mutex;
};

struct RunnerState {
  std::uint64_t id = 0;  // distinguishes runners so a WeightHandle is used with its own
  RunnerOptions options;
  LogSink log;
  DeviceInfo host;     // the CPU: where host backends run
  DeviceInfo primary;  // the GPU, or the CPU when there is none
  BackendSetting setting;
  LoadedProfile profile;
  std::vector<std::unique_ptr<BackendSlot>> backends;

  mutable std::mutex mutex;
  std::map<std::string, std::string> quarantine;            // quarantine_key() -> canary failure
  std::set<std::string> canary_passed;                      // canary_key()
  std::map<std::string, std::string> failures;              // failure_key() -> cause
  OnceLog once;                                             // per-runner warnings (fallbacks)
  // NOTE: gemm() reuses the candidate order of a problem it has planned before, as long as no
  // quarantine or failure was recorded since (`generation` counts those). Planning builds the
  // whole explain trail, which costs more than a decode-sized GEMM on the GPU.
  using ProblemKey = std::tuple<std::int64_t, std::int64_t, std::int64_t, ActivationType, DType>;
  struct CachedPlan {
    std::uint64_t generation = 0;
    std::vector<std::string> order;
    bool strict = false;
    std::string no_candidate_reason;
  };
  std::uint64_t generation = 0;
  std::map<ProblemKey, CachedPlan> plans;
  std::vector<std::weak_ptr<WeightState>> weights;  // every handle prepared, for Runner::resident()

  BackendSlot* find(const std::string& name) const;
  // Host backends are checked against and run on the CPU, GPU backends on the primary device.
  const DeviceInfo& device_for(const Backend& backend) const;
  std::vector<std::string> backend_names() const;
  void warn_once(const std::string& key, const std::string& message);

  // The quarantine that keeps `backend` from serving a problem that takes its kernel `kernel`
  // (Backend::kernel_name): the backend's own or that kernel's; none when neither failed its
  // canary. Callers hold `mutex`.
  struct Quarantine {
    std::string key;  // quarantine_key()
    std::string reason;
  };
  std::optional<Quarantine> quarantine_for(const std::string& backend, const std::string& kernel) const;
};

// Which canary passes have been recorded: per backend, kernel and operand types.
std::string canary_key(const std::string& backend, const std::string& kernel, ActivationType activation, DType output);
std::string failure_key(const std::string& backend, const GemmProblem& problem);

// The candidate list of one problem, with the explain trail. Callers hold state.mutex.
struct Plan {
  Explanation explanation;
  std::vector<std::string> order;  // backends to try, in order (the `ok` candidates)
  bool strict = false;             // an explicit request: no fallback to other backends
};
Plan plan_for(const RunnerState& state, const GemmProblem& problem);

// Fills explanation.memory for the choice; under auto also what the choices at every M keep for
// this weight (plans M = 1, 2, 4, ... 65536: for explain only, never on the gemm path).
void report_memory(const RunnerState& state, Explanation& explanation);

// Adds what `weight`'s layouts and source copy hold to `total`. Takes the weight's lock.
void add_resident(const WeightState& weight, ResidentMemory& total);

// The canary that proves, before it first serves, the kernel `backend` takes for `served` on its
// device (canary_problems.hpp picks the problem), with the served operand types. Runs without
// holding state.mutex. Rethrows Error(unrecoverable).
CanaryReport run_canary(Backend& backend, const DeviceInfo& device, int gpu_index, const GemmProblem& served);

// The shared state of a WeightHandle.
struct WeightState {
  std::uint64_t runner_id = 0;
  Nvfp4View source;                      // borrowed, or pointing into the owned copies below
  std::vector<std::uint8_t> owned_codes;  // WeightSource::copy
  std::vector<std::uint8_t> owned_scales;

  mutable std::mutex mutex;
  std::map<std::string, std::shared_ptr<const PreparedWeight>> layouts;  // backend -> its layout
  std::map<std::string, Memory> layout_memory;                          // backend -> where its layout lives
  std::map<std::string, std::string> prepare_failures;                  // backend -> cause

  // The layout of `backend`, made on first use (a GPU-resident source is staged to the host for
  // host backends). Throws the preparation error, again on later calls without retrying.
  std::shared_ptr<const PreparedWeight> layout_for(Backend& backend, const DeviceInfo& device, int gpu_index);
};

// Picks one backend for the problem, proves it with a canary, runs it, and falls back on failure.
void serve(RunnerState& state, const ActivationView& a, WeightState& weight, float alpha, const MutableDenseView& out,
           const RunContext& context, const GemmProblem& problem);

}  // namespace fp4gemm::dispatch
