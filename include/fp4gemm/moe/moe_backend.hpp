#pragma once
// The interface every MoE backend implements, in the same shape as the dense Backend: checks that
// say why not, prepare once per layer, run per call. A call is four steps —
//   route (router GEMM, softmax, top-k)  →  permute (tokens grouped by expert)  →
//   experts (gate/up GEMM, SiLU·mul, down GEMM per active expert)  →  combine (weighted sum)
// — and the host implementations of the first two are public (moe_routing.hpp) so a CPU backend
// calls them as steps while a GPU backend may fuse them into its own kernels.
#include <memory>
#include <string>

#include "fp4gemm/backend.hpp"
#include "fp4gemm/moe/moe_layer.hpp"

namespace fp4gemm::moe {

// A layer in one backend's layout; holds its own memory. Immutable after prepare().
class PreparedMoe {
 public:
  virtual ~PreparedMoe() = default;
  std::string backend;
  std::int64_t experts = 0, hidden = 0, intermediate = 0;
  bool has_router = false, has_shared = false;
  std::int64_t shared_intermediate = 0;
  bool shared_dense = false;
  // Every expert (and an NVFP4 shared expert) has both input_scales: the layer can run W4A4.
  bool has_input_scales = false;
  ExpertLayout layout = ExpertLayout::separate;
  // Bytes this layout keeps resident (host or device memory, as the backend's memory() says).
  std::int64_t resident_bytes = 0;
};

// The operands of one call. `x` [T, H] (BF16 or FP32) and `out` [T, H] live in the backend's memory().
struct MoeCall {
  DenseView x;
  RoutingView routing;  // topk_ids == nullptr: route with the prepared router
  MoeOptions options;
};

class MoeBackend {
 public:
  virtual ~MoeBackend() = default;
  virtual std::string name() const = 0;
  virtual std::string summary() const = 0;  // one line for `fp4gemm info`
  virtual Memory memory() const = 0;
  virtual CheckResult check_device(const DeviceInfo& device) const = 0;
  virtual CheckResult check_problem(const MoeProblem& problem, const DeviceInfo& device) const = 0;
  CheckResult check(const MoeProblem& problem, const DeviceInfo& device) const {
    CheckResult device_check = check_device(device);
    return device_check ? check_problem(problem, device) : device_check;
  }
  // What it would run for this problem, one line for explain; empty for one path.
  virtual std::string plan(const MoeProblem& /*problem*/, const DeviceInfo& /*device*/) const { return {}; }
  virtual std::unique_ptr<PreparedMoe> prepare(const MoeWeights& weights, const DeviceInfo& device) = 0;
  // out = the layer applied to call.x. Validates everything first (validate_moe_call) and throws
  // Error with nothing written on bad input.
  virtual void run(const MoeCall& call, const PreparedMoe& layer, const MutableDenseView& out,
                   const RunContext& context) = 0;
};

// Checks shared by every backend: shapes agree with the prepared layer, k in [1, E], ids in
// [0, E) and finite weights (host routing), finite x (host), dtypes, memory. Returns the problem;
// throws Error on failure.
MoeProblem validate_moe_call(const MoeCall& call, const PreparedMoe& layer, const MutableDenseView& out,
                             Memory expected_memory);

// The backend's own view of a prepared layer; a layer prepared by another backend is an error.
template <class Prepared>
const Prepared& prepared_moe_as(const PreparedMoe& layer, const std::string& backend) {
  const auto* prepared = dynamic_cast<const Prepared*>(&layer);
  if (prepared == nullptr) {
    throw_invalid("the MoE layer was prepared by backend '" + layer.backend + "', not '" + backend +
                  "': prepare it with the backend that runs it");
  }
  return *prepared;
}

// Checks a layer's weights before preparation: E ≥ 1, every expert the same shapes, K % 16,
// router [E, H] when present, shared expert shapes. Throws Error naming the tensor.
void validate_moe_weights(const MoeWeights& weights);

// The metadata fields of PreparedMoe for these (validated) weights, backend name left empty.
void describe_layer(const MoeWeights& weights, PreparedMoe& layer);

}  // namespace fp4gemm::moe
