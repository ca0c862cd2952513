// MoeRunner: construction (devices, backends, the backend setting), prepare, run, explain.
#include "fp4gemm/moe/moe_runner.hpp"

#include <atomic>

#include "dispatch/runner_pieces.hpp"
#include "moe/moe_runner_state.hpp"

namespace fp4gemm::moe {

struct MoeRunner::State : MoeRunnerState {};
struct MoeLayerHandle::State : MoeLayerState {};

namespace {

std::atomic<std::uint64_t> next_runner_id{1};

}  // namespace

MoeBackendSlot* MoeRunnerState::find(const std::string& name) const {
  for (const auto& slot : backends)
    if (slot->backend->name() == name) return slot.get();
  return nullptr;
}

const DeviceInfo& MoeRunnerState::device_for(const MoeBackend& backend) const {
  return backend.memory() == Memory::host ? host : primary;
}

std::vector<std::string> MoeRunnerState::backend_names() const {
  std::vector<std::string> names;
  for (const auto& slot : backends) names.push_back(slot->backend->name());
  return names;
}

void MoeRunnerState::warn_once(const std::string& key, const std::string& message) {
  once.report(key, dispatch::LogLevel::warning, message, log);
}

std::string moe_failure_key(const std::string& backend, const MoeProblem& problem) {
  return backend + "|" + problem.to_string();
}

MoeRunner::MoeRunner(MoeRunnerOptions options) : state_(std::make_unique<State>()) {
  State& state = *state_;
  state.id = next_runner_id++;
  state.log = options.log ? options.log : dispatch::stderr_sink();
  if (options.backends.empty()) options.backends = make_all_moe_backends();
  for (auto& backend : options.backends) {
    auto slot = std::make_unique<MoeBackendSlot>();
    slot->backend = backend;
    state.backends.push_back(std::move(slot));
  }
  state.host = probe_cpu();
  state.primary = dispatch::select_primary_device(options.device, options.simulated_device, state.host);
  const auto environment = options.environment ? options.environment : dispatch::process_environment();
  state.setting = dispatch::resolve_backend_setting(options.backend, kMoeBackendVariables, environment, state.backend_names());
  for (const auto& warning : state.setting.warnings)
    dispatch::process_once_log().report(warning.key, dispatch::LogLevel::warning, warning.message, state.log);
  state.profile = dispatch::load_runner_profile(options.profile_path, state.primary, state.log);
  state.options = std::move(options);
}

MoeRunner::~MoeRunner() = default;

MoeLayerHandle MoeRunner::prepare(const MoeWeights& weights) {
  validate_moe_weights(weights);
  auto layer = std::make_shared<MoeLayerHandle::State>();
  layer->runner_id = state_->id;
  layer->weights = weights;
  MoeLayerHandle handle;
  handle.state_ = std::move(layer);
  return handle;
}

void MoeRunner::run(const MoeCall& call, const MoeLayerHandle& layer, const MutableDenseView& out,
                    const RunContext& context) {
  if (!layer.state_) throw_invalid("the MoE layer handle is empty: get one from MoeRunner::prepare()");
  if (layer.state_->runner_id != state_->id) {
    throw_invalid("the MoE layer handle was prepared by another MoeRunner; prepare it with the runner that runs it");
  }
  // Every operand check before anything runs, against the layer's shapes.
  PreparedMoe shape;
  describe_layer(layer.state_->weights, shape);
  shape.backend = "runner";
  const MoeProblem problem = validate_moe_call(call, shape, out, call.x.memory);
  if (problem.tokens == 0) return;
  serve_moe(*state_, call, *layer.state_, out, context, problem);
}

MoeExplanation MoeRunner::explain(const MoeProblem& problem) const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return moe_plan_for(*state_, problem).explanation;
}

std::vector<CanaryReport> MoeRunner::run_all_canaries() {
  std::vector<CanaryReport> reports;
  MoeProblem problem;  // the common serving case: BF16 in and out, the router, no shared expert
  problem.activation = ActivationType::bf16;
  problem.output = DType::bf16;
  for (const auto& slot : state_->backends) {
    const DeviceInfo& device = state_->device_for(*slot->backend);
    if (const CheckResult check = slot->backend->check_device(device); !check) {
      CanaryReport report;
      report.backend = slot->backend->name();
      report.reason = "cannot run on " + device.to_string() + ": " + check.reason;
      reports.push_back(report);
      continue;
    }
    CanaryReport report;
    {
      std::lock_guard<std::mutex> run_lock(slot->run_mutex);
      report = run_moe_canary(*slot->backend, device, problem);
    }
    std::lock_guard<std::mutex> lock(state_->mutex);
    if (report.ran && !report.passed) state_->quarantine[report.backend] = report.reason;
    if (report.passed) state_->canary_passed.insert(moe_canary_key(report.backend, problem));
    reports.push_back(report);
  }
  return reports;
}

std::map<std::string, std::string> MoeRunner::quarantined() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->quarantine;
}

const DeviceInfo& MoeRunner::device() const { return state_->primary; }

std::vector<std::string> MoeLayerHandle::prepared_backends() const {
  std::vector<std::string> names;
  if (!state_) return names;
  std::lock_guard<std::mutex> lock(state_->mutex);
  for (const auto& [name, layout] : state_->layouts) names.push_back(name);
  return names;
}

std::int64_t MoeLayerHandle::resident_bytes() const {
  std::int64_t total = 0;
  if (!state_) return total;
  std::lock_guard<std::mutex> lock(state_->mutex);
  for (const auto& [name, layout] : state_->layouts) total += layout->resident_bytes;
  return total;
}

}  // namespace fp4gemm::moe
