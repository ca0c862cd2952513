#include "moe/ref_moe_backend.hpp"

#include "core/host_rows.hpp"
#include "moe/moe_reference.hpp"
#include "moe/moe_weight_copy.hpp"

namespace fp4gemm::moe {
namespace {

struct RefPreparedMoe final : PreparedMoe {
  MoeWeightCopy copy;
};

// The oracle's own accumulation is FP64; the tolerance it reports is not used here.
constexpr double kUnusedAccumulationError = 0.0;

}  // namespace

CheckResult RefMoeBackend::check_device(const DeviceInfo& device) const {
  if (device.is_cuda()) return CheckResult::fail("runs on the CPU only");
  return CheckResult::pass();
}

CheckResult RefMoeBackend::check_problem(const MoeProblem&, const DeviceInfo&) const { return CheckResult::pass(); }

std::unique_ptr<PreparedMoe> RefMoeBackend::prepare(const MoeWeights& weights, const DeviceInfo&) {
  validate_moe_weights(weights);
  auto prepared = std::make_unique<RefPreparedMoe>();
  prepared->copy = copy_moe_weights(weights, name());
  describe_layer(weights, *prepared);
  prepared->backend = name();
  prepared->resident_bytes = prepared->copy.bytes();
  return prepared;
}

void RefMoeBackend::run(const MoeCall& call, const PreparedMoe& layer, const MutableDenseView& out, const RunContext&) {
  const MoeProblem problem = validate_moe_call(call, layer, out, Memory::host);
  const auto& prepared = prepared_moe_as<RefPreparedMoe>(layer, name());
  if (problem.tokens == 0) return;
  const MoeReference reference = reference_moe(prepared.copy.weights, call, kUnusedAccumulationError);
  for (std::int64_t t = 0; t < problem.tokens; ++t)
    for (std::int64_t c = 0; c < problem.hidden; ++c)
      store_output(out, t, c, float(reference.values[std::size_t(t * problem.hidden + c)]));
}

}  // namespace fp4gemm::moe
