#include "moe/moe_preference.hpp"

namespace fp4gemm::moe {

const MoePreference& moe_preference_for(dispatch::ArchFamily family) {
  // NOTE: cuda_moe leads the Ampere and Hopper rows without a measurement yet: it is the only
  // backend that takes operands in GPU memory (the runner skips it for host operands, and
  // GPU-less builds do not compile it), and the MoE runner's canary proves it against ref before
  // it first serves, quarantining it when wrong. Its place against cpu has not been measured.
  static const MoePreference kGpu{
      {"cuda_moe", "cpu", "ref"},
      "cuda_moe (not yet measured on hardware) runs operands in GPU memory, all active experts in one launch per GEMM; "
      "cpu groups tokens by expert and runs the dense cpu kernels (all cores); ref is the FP64 oracle, "
      "plain loops on one thread, kept last as the answer of last resort"};
  static const MoePreference kHost{
      {"cpu", "ref"},
      "cpu groups tokens by expert and runs the dense cpu kernels (all cores); ref is the FP64 oracle, "
      "plain loops on one thread, kept last as the answer of last resort"};
  const bool cuda_moe_row = family == dispatch::ArchFamily::sm90 || family == dispatch::ArchFamily::sm8x;
  return cuda_moe_row ? kGpu : kHost;
}

}  // namespace fp4gemm::moe
