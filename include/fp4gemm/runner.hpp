#pragma once
// The Runner: the one object an application holds to run NVFP4 GEMMs. It picks a backend per
// problem (argument > FP4GEMM_BACKEND > tuned profile > auto order filtered by each backend's
// checks), proves each backend's kernel with a canary before it first serves, falls back to the next
// candidate when one fails, and explains every decision. See docs/RUNNER.md.
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fp4gemm/backend.hpp"
#include "fp4gemm/dispatch/backend_setting.hpp"
#include "fp4gemm/dispatch/explanation.hpp"
#include "fp4gemm/dispatch/log_sink.hpp"
#include "fp4gemm/dispatch/profile.hpp"

namespace fp4gemm {

struct RunnerOptions {
  // A backend name, "auto", or empty (then FP4GEMM_BACKEND, the profile, auto decide).
  std::string backend;
  // The CUDA ordinal to run on; kFirstGpu picks device 0 when there is one, else the CPU;
  // kCpuOnly never uses a GPU.
  static constexpr int kFirstGpu = -1;
  static constexpr int kCpuOnly = -2;
  int device = kFirstGpu;
  // Replaces the probed GPU with a hand-built one (tests, `explain --simulate-sm`). A device of
  // kind cpu means "no GPU".
  std::optional<DeviceInfo> simulated_device;
  std::string profile_path;   // a tuned profile to load; empty for none
  dispatch::LogSink log;      // empty: stderr
  dispatch::EnvironmentLookup environment;  // empty: the process environment
  // The backends to choose from; empty: every backend compiled in (make_all_backends()).
  std::vector<std::shared_ptr<Backend>> backends;
  // Replaces the preference table's row for this device (tests, experiments); empty: the table.
  std::vector<std::string> auto_order;
  bool canary = true;         // prove each backend's kernel against `ref` before it first serves
};

// The outcome of one canary: a small random problem checked against `ref`.
struct CanaryReport {
  std::string backend;
  std::string kernel;   // the backend's kernel the canary ran (Backend::kernel_name); "" for one path
  std::string problem;  // GemmProblem::to_string() of the canary
  bool ran = false;     // false when the backend cannot run here (reason says why)
  bool passed = false;
  std::string reason;   // why it failed or did not run
  // "" when the canary ran the kernel it was to prove; else which kernel went unproven and why
  // (no canary problem within the cost cap takes it), and which one ran instead.
  std::string coverage_gap;
};

// The key of Runner::quarantined() for a backend's kernel (Backend::kernel_name): the backend's
// name when the kernel is "" (a backend with one path), else "backend (kernel kernel)", e.g.
// "cuda_nvfp4 (wgmma kernel)": only that kernel is quarantined, its other kernels still serve.
std::string quarantine_key(const std::string& backend, const std::string& kernel);

// Memory held by the layouts of prepared weights (each backend's Backend::residency, made lazily),
// plus the host copies WeightSource::copy keeps. The caller's own checkpoint buffers are not counted.
struct ResidentMemory {
  std::int64_t device_bytes = 0;
  std::int64_t host_bytes = 0;
  std::map<std::string, std::int64_t> by_backend;  // layout bytes per backend ("source copy": the host copies)
  std::int64_t total() const { return device_bytes + host_bytes; }
  ResidentMemory& operator+=(const ResidentMemory& other);
};

namespace dispatch {
struct WeightState;
struct RunnerState;
}  // namespace dispatch

// A weight prepared for the runner that made it. It holds each backend's layout, made lazily the
// first time that backend serves the weight (auto may pick different backends for different M).
// Copies share the same layouts. See docs/RUNNER.md for who owns which memory.
class WeightHandle {
 public:
  WeightHandle() = default;
  std::int64_t rows() const;  // N
  std::int64_t cols() const;  // K
  // Backends whose layout has been made so far.
  std::vector<std::string> prepared_backends() const;
  // What this weight's layouts hold now (copies of a handle share them).
  ResidentMemory resident() const;
  explicit operator bool() const { return state_ != nullptr; }

 private:
  friend class Runner;
  std::shared_ptr<dispatch::WeightState> state_;
};

// Whether prepare() copies the checkpoint weight. Lazy layouts need the source later:
// `borrow` keeps a pointer (the caller keeps the source alive as long as the handle);
// `copy` keeps a host copy (the caller may free the source; costs one more copy of the weight).
enum class WeightSource { borrow, copy };

class Runner {
 public:
  explicit Runner(RunnerOptions options = {});
  ~Runner();
  Runner(const Runner&) = delete;
  Runner& operator=(const Runner&) = delete;

  // Validates the weight and records it; layouts are made when a backend first serves it.
  WeightHandle prepare(const Nvfp4View& weight, WeightSource source = WeightSource::borrow);

  // out = alpha * a * w^T on the best backend that can serve it; falls back to the next candidate
  // when one fails. Throws Error: invalid_argument (bad operands, nothing run), unsupported (no
  // backend can serve), backend_failure (every candidate failed), unrecoverable (the CUDA context
  // is broken). On a throw the contents of `out` are unspecified; on return every element is the
  // result of one backend that completed.
  void gemm(const ActivationView& a, const WeightHandle& weight, float alpha, const MutableDenseView& out,
            const RunContext& context = {});

  // What gemm() would do for `problem` now (quarantines and failures so far included), and what
  // the choice keeps in memory: under auto, what the choices at every M keep together for this weight.
  dispatch::Explanation explain(const GemmProblem& problem) const;

  // What the weights this runner prepared, and that are still alive, hold now.
  ResidentMemory resident() const;

  // Runs the canary of every backend on its device now (for `fp4gemm doctor`), with the given
  // operand types: one report per kernel the backend takes for the doctor's problems
  // (docs/RUNNER.md, "Canary"), one for a backend with one path. A failing kernel (or
  // single-path backend) is quarantined as it would be before serving.
  std::vector<CanaryReport> run_all_canaries(ActivationType activation = ActivationType::bf16,
                                             DType output = DType::f32);

  // Backends and kernels quarantined by a failed canary (keyed by quarantine_key), with the reason.
  std::map<std::string, std::string> quarantined() const;
  const DeviceInfo& device() const;       // the GPU, or the CPU when there is none
  const DeviceInfo& host_device() const;  // the CPU
  const dispatch::BackendSetting& setting() const;

 private:
  std::unique_ptr<dispatch::RunnerState> state_;
};

}  // namespace fp4gemm
