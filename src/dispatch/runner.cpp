// Runner: construction (devices, backends, configuration, profile), prepare, gemm, explain.
#include "fp4gemm/runner.hpp"

#include <atomic>

#include "dispatch/canary_problems.hpp"
#include "dispatch/runner_pieces.hpp"
#include "dispatch/runner_state.hpp"
#include "fp4gemm/registry.hpp"

namespace fp4gemm {

std::string quarantine_key(const std::string& backend, const std::string& kernel) {
  return kernel.empty() ? backend : backend + " (" + kernel + " kernel)";
}

namespace dispatch {

BackendSlot* RunnerState::find(const std::string& name) const {
  for (const auto& slot : backends)
    if (slot->backend->name() == name) return slot.get();
  return nullptr;
}

const DeviceInfo& RunnerState::device_for(const Backend& backend) const {
  return backend.memory() == Memory::host ? host : primary;
}

std::vector<std::string> RunnerState::backend_names() const {
  std::vector<std::string> names;
  for (const auto& slot : backends) names.push_back(slot->backend->name());
  return names;
}

void RunnerState::warn_once(const std::string& key, const std::string& message) {
  once.report(key, LogLevel::warning, message, log);
}

std::optional<RunnerState::Quarantine> RunnerState::quarantine_for(const std::string& backend,
                                                                   const std::string& kernel) const {
  for (const std::string& key : {backend, quarantine_key(backend, kernel)}) {
    if (auto found = quarantine.find(key); found != quarantine.end()) return Quarantine{key, found->second};
  }
  return std::nullopt;
}

std::string canary_key(const std::string& backend, const std::string& kernel, ActivationType activation, DType output) {
  return backend + "|" + kernel + "|" + to_string(activation) + "|" + to_string(output);
}

std::string failure_key(const std::string& backend, const GemmProblem& problem) {
  return backend + "|" + problem.to_string();
}

LoadedProfile load_runner_profile(const std::string& path, const DeviceInfo& primary, const LogSink& log) {
  LoadedProfile loaded;
  if (path.empty()) return loaded;
  loaded.profile = TunedProfile::load(path);
  for (const std::string& alias : loaded.profile->deprecated_names) {
    process_once_log().report("deprecated-backend:" + alias, LogLevel::warning,
                              "tuned profile '" + path + "': " + deprecated_backend_warning(alias), log);
  }
  loaded.mismatch = loaded.profile->mismatch_reason(metadata_for(primary));
  if (!loaded.mismatch.empty()) process_once_log().report("profile:" + path, LogLevel::warning, loaded.mismatch, log);
  return loaded;
}

bool profile_applies(const LoadedProfile& loaded, ProfileReport& report) {
  if (!loaded.profile) {
    report.detail = "no tuned profile loaded";
    return false;
  }
  report.loaded = true;
  if (!loaded.mismatch.empty()) {
    report.detail = loaded.mismatch;
    return false;
  }
  report.valid = true;
  return true;
}

DeviceInfo select_primary_device(int device, const std::optional<DeviceInfo>& simulated, const DeviceInfo& host) {
  if (simulated) return *simulated;
  if (device == RunnerOptions::kCpuOnly) return host;
  const std::vector<DeviceInfo> gpus = probe_cuda_devices();
  if (device == RunnerOptions::kFirstGpu) return gpus.empty() ? host : gpus.front();
  if (device < 0 || device >= int(gpus.size())) {
    throw Error(ErrorCode::invalid_argument,
                "CUDA device " + std::to_string(device) + " does not exist: this process sees " +
                    std::to_string(gpus.size()) + " CUDA device(s)" +
                    (gpus.empty() ? " (" + cuda_unavailable_reason() + ")" : "") + "; pick an index below that or the CPU");
  }
  return gpus[std::size_t(device)];
}

namespace {

std::atomic<std::uint64_t> next_runner_id{1};

}  // namespace
}  // namespace dispatch

Runner::Runner(RunnerOptions options) : state_(std::make_unique<dispatch::RunnerState>()) {
  auto& state = *state_;
  state.id = dispatch::next_runner_id++;
  state.log = options.log ? options.log : dispatch::stderr_sink();
  if (options.backends.empty()) {
    for (auto& backend : make_all_backends()) options.backends.push_back(std::move(backend));
  }
  for (auto& backend : options.backends) {
    auto slot = std::make_unique<dispatch::BackendSlot>();
    slot->backend = backend;
    state.backends.push_back(std::move(slot));
  }
  state.host = probe_cpu();
  state.primary = dispatch::select_primary_device(options.device, options.simulated_device, state.host);

  const auto environment = options.environment ? options.environment : dispatch::process_environment();
  state.setting = dispatch::resolve_backend_setting(options.backend, dispatch::kGemmBackendVariables, environment,
                                                    state.backend_names());
  // Configuration warnings are about the process, not this runner: once per process.
  for (const auto& warning : state.setting.warnings)
    dispatch::process_once_log().report(warning.key, dispatch::LogLevel::warning, warning.message, state.log);

  state.profile = dispatch::load_runner_profile(options.profile_path, state.primary, state.log);
  state.options = std::move(options);
}

Runner::~Runner() = default;

WeightHandle Runner::prepare(const Nvfp4View& weight, WeightSource source) {
  validate_weight(weight);  // shapes and buffers; block scales only when they are on the host
  if (source == WeightSource::copy && weight.memory != Memory::host) {
    throw_invalid("WeightSource::copy keeps a host copy and needs a weight in host memory; pass WeightSource::borrow "
                  "for a weight in GPU memory and keep it alive as long as the handle");
  }
  auto state = std::make_shared<dispatch::WeightState>();
  state->runner_id = state_->id;
  state->source = weight;
  if (source == WeightSource::copy) {
    state->owned_codes.assign(weight.codes, weight.codes + weight.code_bytes());
    state->owned_scales.assign(weight.scales, weight.scales + weight.scale_bytes());
    state->source.codes = state->owned_codes.data();
    state->source.scales = state->owned_scales.data();
  }
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    std::erase_if(state_->weights, [](const std::weak_ptr<dispatch::WeightState>& held) { return held.expired(); });
    state_->weights.push_back(state);
  }
  WeightHandle handle;
  handle.state_ = std::move(state);
  return handle;
}

void Runner::gemm(const ActivationView& a, const WeightHandle& weight, float alpha, const MutableDenseView& out,
                  const RunContext& context) {
  if (!weight.state_) throw_invalid("the weight handle is empty: get one from Runner::prepare()");
  if (weight.state_->runner_id != state_->id) {
    throw_invalid("the weight handle was prepared by another Runner; prepare it with the runner that runs it");
  }
  if (out.memory != a.memory()) {
    throw_invalid(std::string("the activation is in ") + to_string(a.memory()) + " memory but the output in " +
                  to_string(out.memory) + " memory; pass both in the same memory (the runner stages both when a "
                  "backend needs the other)");
  }
  // Shape, stride and dtype checks before anything runs.
  PreparedWeight shape;
  shape.rows = weight.rows();
  shape.cols = weight.cols();
  shape.backend = "runner";
  const GemmProblem problem = validate_gemm(a, shape, out, a.memory());
  if (problem.m == 0 || problem.n == 0) return;
  dispatch::serve(*state_, a, *weight.state_, alpha, out, context, problem);
}

dispatch::Explanation Runner::explain(const GemmProblem& problem) const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  dispatch::Explanation explanation = dispatch::plan_for(*state_, problem).explanation;
  dispatch::report_memory(*state_, explanation);
  return explanation;
}

ResidentMemory Runner::resident() const {
  std::vector<std::shared_ptr<dispatch::WeightState>> live;
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    for (const auto& held : state_->weights)
      if (auto weight = held.lock()) live.push_back(std::move(weight));
  }
  ResidentMemory total;
  for (const auto& weight : live) dispatch::add_resident(*weight, total);  // each takes its own lock
  return total;
}

std::vector<CanaryReport> Runner::run_all_canaries(ActivationType activation, DType output) {
  std::vector<CanaryReport> reports;
  for (const auto& slot : state_->backends) {
    Backend& backend = *slot->backend;
    const DeviceInfo& device = state_->device_for(backend);
    const CheckResult device_check = backend.check_device(device);
    if (!device_check) {
      CanaryReport report;
      report.backend = backend.name();
      report.reason = "cannot run on " + device.to_string() + ": " + device_check.reason;
      reports.push_back(report);
      continue;
    }
    // The requested operand types first, then the others, so W4A4-only backends get a canary too.
    std::vector<ActivationType> activations{activation};
    for (ActivationType other : {ActivationType::bf16, ActivationType::nvfp4, ActivationType::f32})
      if (other != activation) activations.push_back(other);
    // One canary per kernel; a backend that accepts none of the problems gets one report saying why.
    std::vector<GemmProblem> targets = dispatch::doctor_canary_targets(backend, device, activations, output);
    if (targets.empty()) targets.push_back(dispatch::doctor_canary_problems(activation, output).front());
    for (const GemmProblem& target : targets) {
      CanaryReport report;
      {
        std::lock_guard<std::mutex> run_lock(slot->run_mutex);
        report = dispatch::run_canary(backend, device, state_->primary.index, target);
      }
      // NOTE: report.kernel is the target's kernel: each target is the first doctor problem that
      // takes its kernel, and is itself a canary candidate within the cost cap.
      std::lock_guard<std::mutex> lock(state_->mutex);
      if (report.ran && !report.passed) {
        state_->quarantine[quarantine_key(report.backend, report.kernel)] = report.reason;
        ++state_->generation;
      }
      reports.push_back(report);
    }
  }
  return reports;
}

std::map<std::string, std::string> Runner::quarantined() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->quarantine;
}

const DeviceInfo& Runner::device() const { return state_->primary; }
const DeviceInfo& Runner::host_device() const { return state_->host; }
const dispatch::BackendSetting& Runner::setting() const { return state_->setting; }

}  // namespace fp4gemm
