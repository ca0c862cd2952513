#include "moe/moe_preference.hpp"

namespace fp4gemm::moe {

const MoePreference& moe_preference_for(dispatch::ArchFamily family) {
  // NOTE: cuda_moe leads the Ampere and Hopper rows: it is the only backend that takes operands in
  // GPU memory (the runner skips it for host operands, and GPU-less builds do not compile it), and
  // the MoE runner's canary proves it against ref before it first serves, quarantining it when
  // wrong. Measured on H100s and H200s (SM 8.x is unmeasured); the host backends there would stage
  // the layer's operands through host memory and run on a few cores. The figures are
  // bench/results/h100-moe.md's.
  static const MoePreference kGpu{
      {"cuda_moe", "cpu", "ref"},
      "cuda_moe runs operands in GPU memory, all active experts in one launch per GEMM (fp4gemm bench --moe on an "
      "H100, Qwen3.5-397B-A17B layer, given routing: T = 1 48.3 us, T = 8 258, T = 64 1175, T = 4096 4718, 1.6-2.6x "
      "cuBLAS BF16 grouped on the touched experts in the same run; SM 8.x unmeasured); "
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
