// The MoE runners and the prepared-layer table behind torch.ops.fp4gemm.moe (see moe_table.hpp).
#include "moe_table.hpp"

#include <map>
#include <memory>
#include <mutex>
#include <utility>

namespace fp4gemm::torch_ops {
namespace {

struct MoeEntry {
  std::vector<at::Tensor> tensors;  // kept alive: the runner borrows from them to make layouts lazily
  moe::MoeWeights weights;
  std::map<const moe::MoeRunner*, moe::MoeLayerHandle> handles;  // one per runner that has served it
};

struct MoeState {
  std::mutex mutex;
  std::map<std::pair<int, std::string>, std::unique_ptr<moe::MoeRunner>> runners;  // (device or -1 for CPU, backend)
  std::map<std::int64_t, MoeEntry> layers;
  std::int64_t next_id = 1;
};

MoeState& moe_state() {
  static MoeState* instance = new MoeState();  // never destroyed: runners may outlive static teardown order
  return *instance;
}

}  // namespace

std::int64_t register_moe_layer(std::vector<at::Tensor> tensors, moe::MoeWeights weights) {
  moe::validate_moe_weights(weights);
  MoeState& s = moe_state();
  std::lock_guard<std::mutex> lock(s.mutex);
  const std::int64_t id = s.next_id++;
  MoeEntry& entry = s.layers[id];
  entry.tensors = std::move(tensors);
  entry.weights = std::move(weights);
  return id;
}

MoeTarget moe_target(std::int64_t id, const std::string& backend, const Placement& placement) {
  MoeState& s = moe_state();
  std::lock_guard<std::mutex> lock(s.mutex);
  auto found = s.layers.find(id);
  if (found == s.layers.end()) {
    throw_invalid("moe: layer id " + std::to_string(id) +
                  " is not a prepared MoE layer (never returned by prepare_moe, or released)");
  }
  const int device_key = placement.memory == Memory::cuda ? placement.device : -1;
  auto& runner = s.runners[{device_key, backend}];
  if (!runner) {
    moe::MoeRunnerOptions options;
    // "auto" leaves the choice to the runner as the CLI without --moe-backend does: FP4GEMM_MOE_BACKEND, then auto.
    options.backend = backend == "auto" ? "" : backend;
    options.device = placement.memory == Memory::cuda ? placement.device : RunnerOptions::kCpuOnly;
    runner = std::make_unique<moe::MoeRunner>(std::move(options));
  }
  MoeEntry& entry = found->second;
  auto& handle = entry.handles[runner.get()];
  if (!handle) handle = runner->prepare(entry.weights);
  return {runner.get(), handle, entry.weights.hidden()};
}

void release_moe_layer(std::int64_t id) {
  MoeState& s = moe_state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.layers.erase(id) == 0) throw_invalid("release_moe: layer id " + std::to_string(id) + " is not a prepared MoE layer");
}

}  // namespace fp4gemm::torch_ops
