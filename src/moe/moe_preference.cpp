#include "moe/moe_preference.hpp"

namespace fp4gemm::moe {

const MoePreference& moe_preference_for(dispatch::ArchFamily) {
  // NOTE: every family has the host order today: MoE operands live in host memory and no GPU MoE
  // backend exists yet. The Hopper MoE backend (the next issue) goes at the front of an SM 9.0 row
  // here, with the measurement that puts it there.
  static const MoePreference kHost{
      {"cpu", "ref"},
      "cpu groups tokens by expert and runs the dense cpu kernels (all cores); ref is the FP64 oracle, "
      "plain loops on one thread, kept last as the answer of last resort"};
  return kHost;
}

}  // namespace fp4gemm::moe
