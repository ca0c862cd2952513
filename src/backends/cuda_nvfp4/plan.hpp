#pragma once
// cuda_nvfp4's one selector: for a problem on a device it enumerates the three kernels (mma.sync on
// SM 8.0+, and on SM 9.0 wgmma for small M and prefill above kMaxActivationRows), rejects each that
// cannot or should not run with a named reason, and takes the one the rules rank first; then the
// launch shape of that kernel, its K splits, clusters or stream-K grid, and whether it launches
// with programmatic dependent launch (PDL). The Plan holds all of it, the rules table rows that
// decided (selection_rules.hpp) and the rejected kernels, and prints itself for `fp4gemm explain`.
// run(), kernel_name() and kernel_plan() each make it once per call. Host code only, so it also
// answers for simulated devices and in builds without CUDA.
#include <string>
#include <string_view>
#include <vector>

#include "backends/cuda_nvfp4/kernel_switch.hpp"
#include "backends/cuda_nvfp4/mma_small_m/sm80_nvfp4_mma_tuning.hpp"
#include "backends/cuda_nvfp4/overrides.hpp"
#include "backends/cuda_nvfp4/wgmma_prefill/sm90_nvfp4_prefill_tuning.hpp"
#include "backends/cuda_nvfp4/wgmma_small_m/sm90_nvfp4_wgmma_tuning.hpp"
#include "fp4gemm/device.hpp"
#include "fp4gemm/types.hpp"

namespace fp4gemm::cuda_nvfp4 {

// A kernel the selector did not take, and why.
struct Rejection {
  DecodeKernel kernel;
  std::string reason;
};

struct Plan {
  GemmProblem problem;
  int sm = 0;                       // major * 10 + minor
  int multiprocessors = 0;          // 0 when unknown
  ResidentCtasPerSm occupancy;      // the mma.sync kernels' CTAs per SM on a probed GPU; empty otherwise
  bool dequantize_activations = false;  // NVFP4 activations become BF16 first (exact)

  DecodeKernel kernel = DecodeKernel::mma;
  std::string kernel_rule;          // why this kernel, in words
  std::vector<Rejection> rejected;  // the other kernels

  LaunchShape mma_rule_shape{};     // mma.sync: the size rule's shape, before the grid is fitted to waves
  LaunchShape mma{};                // mma.sync: the shape launched
  bool mma_overridden = false;      // FP4GEMM_DECODE_SHAPE set it
  WgmmaShape wgmma{};               // wgmma: the grid launched
  bool wgmma_overridden = false;    // FP4GEMM_WGMMA_SHAPE / FP4GEMM_WGMMA_STREAM set it
  StreamKPartition stream{};        // wgmma with stream_ctas > 0: how the CTAs share the work
  int prefill_splits = 1;           // prefill: K split of each output tile
  bool prefill_overridden = false;  // FP4GEMM_PREFILL_SPLITS set it
  int wide_tokens = 0;              // wide prefill: the CTA width in activation rows
  std::int64_t wide_ctas = 0;       // wide prefill: the persistent grid
  bool wide_overridden = false;     // FP4GEMM_WIDE_CTAS set the grid
  bool wide_tokens_overridden = false;  // FP4GEMM_WIDE_TOKENS set the width
  ProgrammaticLaunch pdl = ProgrammaticLaunch::off;  // for mma.sync, when_grid_fills is decided at launch by the occupancy

  std::vector<std::string_view> rules;  // the selection_rules.hpp rows that decided, by name

  // Whether the mma.sync grid launches with PDL: the policy, or for when_grid_fills the fill test
  // at `resident_ctas_per_sm` (a clustered grid takes it at any fill).
  bool mma_programmatic(int resident_ctas_per_sm) const;

  // The plan in words (one line), then the rejected kernels and the deciding rules with their values.
  // `device_note` (the probed GPU's occupancy facts) follows the first line.
  std::string to_string(const std::string& device_note = "") const;
};

// The plan for `problem` on `device`. `occupancy`: the compiled mma.sync kernels' CTAs per SM on a
// probed GPU (the grid is then fitted to its waves). `after_copy`: the kernel follows a copy on the
// stream, not a kernel, so it launches without PDL. Throws Error(invalid_argument) naming a
// malformed knob the plan consults.
Plan select_plan(const GemmProblem& problem, const DeviceInfo& device, const Overrides& overrides,
                 const ResidentCtasPerSm& occupancy = nullptr, bool after_copy = false);

// The kernel's rule in words (plan_text.cpp); `pairs_ahead`: tile pairs run ahead of the wgmma the
// rule picks.
std::string kernel_rule_text(const Plan& plan, const Overrides& overrides, bool pairs_ahead);

// select_plan's Plan::to_string, or "cannot plan: ..." with the error's sentence.
std::string describe_plan(const GemmProblem& problem, const DeviceInfo& device, const Overrides& overrides,
                          const ResidentCtasPerSm& occupancy = nullptr);

// describe_plan with the knobs of this process's environment.
inline std::string describe_kernel_plan(const GemmProblem& problem, const DeviceInfo& device,
                                        const ResidentCtasPerSm& occupancy = nullptr) {
  return describe_plan(problem, device, Overrides::from_environment(), occupancy);
}

// The whole rules table, one row per line, for `fp4gemm explain --rules`.
std::string describe_selection_rules();

}  // namespace fp4gemm::cuda_nvfp4
