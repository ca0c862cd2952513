// Per-device ceilings and the roofline estimate `explain` prints.
#include "fp4gemm/dispatch/roofline.hpp"

#include <algorithm>

namespace fp4gemm::dispatch {
namespace {

constexpr double kTera = 1e12;

// NOTE: every row but the H200 is a nominal datasheet figure (dense, no sparsity) for one
// representative part of the family, rounded; none was measured by this project. They exist so
// `explain` can say "memory-bound" or "compute-bound" everywhere; replace a row with a measurement
// (and set measured) when someone runs `fp4gemm bench` on that GPU.
DeviceCeilings nominal(const char* label, double bandwidth_tb_s, double bf16_tflops, double fp4_tflops) {
  return {std::string(label) + " (nominal datasheet figures, not measured)", false, bandwidth_tb_s * kTera,
          bf16_tflops * kTera, fp4_tflops * kTera};
}

}  // namespace

DeviceCeilings ceilings_for(const DeviceInfo& device) {
  if (!device.is_cuda()) return {"CPU (no ceiling table)", false, 0.0, 0.0, 0.0};
  if (device.name.find("H200") != std::string::npos) {
    // Measured on one H200: device copy 4.28 TB/s, cuBLAS BF16 8192^3 796 TFLOP/s.
    return {"H200 (measured: copy 4.28 TB/s, cuBLAS BF16 796 TFLOP/s)", true, 4.28 * kTera,
            796.0 * kTera, 0.0};
  }
  switch (device.sm()) {
    case 80: return nominal("SM 8.0, A100 SXM 80GB", 2.04, 312, 0);
    case 86: case 87: return nominal("SM 8.6, A10", 0.6, 125, 0);
    case 89: return nominal("SM 8.9, L40S", 0.864, 362, 0);
    case 90: return nominal("SM 9.0, H100 SXM", 3.35, 989, 0);
    case 100: return nominal("SM 10.0, B200", 8.0, 2250, 9000);
    case 103: return nominal("SM 10.3, B300", 8.0, 2250, 13500);
    case 120: return nominal("SM 12.0, RTX PRO 6000 Blackwell", 1.79, 500, 2000);
    case 121: return nominal("SM 12.1, GB10", 0.273, 125, 500);
    default: return {"SM " + std::to_string(device.sm_major) + "." + std::to_string(device.sm_minor) + " (no ceiling table)",
                     false, 0.0, 0.0, 0.0};
  }
}

RooflineEstimate estimate_roofline(const GemmProblem& problem, const DeviceInfo& device, bool native_fp4) {
  RooflineEstimate estimate;
  estimate.ceilings = ceilings_for(device);
  estimate.bytes = problem.minimal_bytes();
  estimate.flops = problem.flops();
  const bool use_fp4 = native_fp4 && estimate.ceilings.fp4_flops_per_s > 0.0;
  const double math_rate = use_fp4 ? estimate.ceilings.fp4_flops_per_s : estimate.ceilings.bf16_flops_per_s;
  estimate.math = use_fp4 ? "fp4" : "bf16";
  if (estimate.ceilings.bandwidth_bytes_per_s <= 0.0 || math_rate <= 0.0) return estimate;
  estimate.available = true;
  estimate.memory_seconds = estimate.bytes / estimate.ceilings.bandwidth_bytes_per_s;
  estimate.compute_seconds = estimate.flops / math_rate;
  estimate.seconds = std::max(estimate.memory_seconds, estimate.compute_seconds);
  estimate.bound = estimate.memory_seconds >= estimate.compute_seconds ? "memory" : "compute";
  return estimate;
}

}  // namespace fp4gemm::dispatch
