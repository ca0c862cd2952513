#include "moe/faulty_moe_backends.hpp"

#include <cmath>

#include "core/host_rows.hpp"
#include "fp4gemm/error.hpp"

namespace fp4gemm::moe::testing {

std::unique_ptr<PreparedMoe> FaultyMoeBackend::prepare(const MoeWeights& weights, const DeviceInfo& device) {
  ++prepares;
  if (fault_ == MoeFault::throw_in_prepare) throw Error(ErrorCode::backend_failure, "uploading the experts failed");
  return reference_.prepare(weights, device);
}

void FaultyMoeBackend::run(const MoeCall& call, const PreparedMoe& layer, const MutableDenseView& out,
                           const RunContext& context) {
  ++runs;
  if (fault_ == MoeFault::throw_in_run) throw Error(ErrorCode::backend_failure, "the grouped GEMM launch failed");
  reference_.run(call, layer, out, context);
  if (fault_ == MoeFault::none) return;
  std::vector<float> row(static_cast<std::size_t>(out.cols));
  for (std::int64_t r = 0; r < out.rows; ++r) {
    load_activation_row(ActivationView::from_dense(out.as_const()), r, row.data());
    for (std::int64_t c = 0; c < out.cols; ++c)
      store_output(out, r, c, fault_ == MoeFault::nan ? NAN : 1.5f * row[std::size_t(c)]);
  }
}

}  // namespace fp4gemm::moe::testing
