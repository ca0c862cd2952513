// select_plan: enumerate the kernels, reject each with a reason, rank by the rules; then the
// chosen kernel's launch. (The Plan's words: plan_text.cpp.)
#include "backends/cuda_nvfp4/kernel_switch.hpp"
#include "backends/cuda_nvfp4/plan.hpp"

#include "backends/cuda_nvfp4/selection_rules.hpp"
#include "backends/cuda_nvfp4/weight_layout.hpp"
#include "fp4gemm/error.hpp"

namespace fp4gemm::cuda_nvfp4 {
namespace {

constexpr DecodeKernel kKernels[] = {DecodeKernel::mma, DecodeKernel::wgmma, DecodeKernel::prefill, DecodeKernel::wide};

// Why `candidate` does not run where `chosen` does; empty when it is the chosen one.
std::string rejection_reason(DecodeKernel candidate, DecodeKernel chosen, const Plan& plan, const Overrides& overrides,
                             bool pairs_ahead) {
  if (candidate == chosen) return "";
  const GemmProblem& problem = plan.problem;
  const bool small_m = problem.m <= kMaxActivationRows;
  if (candidate != DecodeKernel::mma && plan.sm != 90) return "sm_90a code: SM 9.0 only";
  if (candidate == DecodeKernel::wgmma && !small_m) return "M > " + std::to_string(kMaxActivationRows) + ": its widest token width is 64";
  if (candidate == DecodeKernel::mma && !small_m) return "M > " + std::to_string(kMaxActivationRows) + " on SM 9.0: the prefill kernel serves it";
  if (overrides.decode_kernel) return "FP4GEMM_DECODE_KERNEL=" + *overrides.decode_kernel;
  const bool prefills = candidate == DecodeKernel::prefill || candidate == DecodeKernel::wide;
  if (prefills && small_m) return "M <= " + std::to_string(kMaxActivationRows) + ": a small-M kernel serves it";
  if (candidate == DecodeKernel::wide) {
    return problem.m < kWidePrefillMinM ? "M < " + std::to_string(kWidePrefillMinM)
                                         : "its " + std::to_string(wide_tiles(problem.m, problem.n)) + " tiles fill less than " +
                                               std::to_string(int(kWideMinSmFill * 100)) + "% of the SMs (it has no K split)";
  }
  if (candidate == DecodeKernel::prefill) return "the wide prefill kernel's rule holds";
  if (candidate == DecodeKernel::mma) return "the wgmma rule holds";
  return pairs_ahead ? "tile pairs that fit one wave run ahead of it" : "below the wgmma rule";
}

// The rows of the kernel switch that apply at M (SM 9.0, M <= kMaxActivationRows).
void add_kernel_rules(const Plan& plan, bool pairs_considered, std::vector<std::string_view>& rules) {
  const std::int64_t m = plan.problem.m;
  rules.push_back("kMaxActivationRows");
  if (m >= kWgmmaMinM) {
    rules.insert(rules.end(), {"kWgmmaMinM", "kWgmmaMinN", "kWgmmaMinElements"});
  } else if (m >= kWgmmaFilledMinM) {
    rules.insert(rules.end(), {"kWgmmaFilledMinM", "kWgmmaFilledMinK", "kWgmmaMinSmFill", "kWgmmaMidStreamMinN", "kWgmmaMidStreamMinK"});
  } else if (m < kWgmmaTallMinM) {
    rules.push_back("kWgmmaTallMinM");  // below every wgmma rule's M
  } else {
    rules.insert(rules.end(), {"kWgmmaTallMinM", "kWgmmaTallMinN", "kWgmmaTallMinK", "kWgmmaTallStreamMinN", "kWgmmaTallStreamMinK"});
  }
  if (pairs_considered) rules.insert(rules.end(), {"kPairsAheadOfWgmmaMaxChunksPerWarp", "kMinPairsAheadOfStreamKWarpsPerSm"});
}

void plan_mma(Plan& plan, const Overrides& overrides) {
  const GemmProblem& problem = plan.problem;
  const bool programmatic = plan.pdl != ProgrammaticLaunch::off;
  plan.mma_rule_shape = choose_launch_shape(problem.m, problem.n, problem.k, plan.multiprocessors, programmatic);
  plan.mma = choose_launch_shape(problem.m, problem.n, problem.k, plan.multiprocessors, programmatic, plan.occupancy);
  plan.mma_overridden = shape_override(plan.mma, overrides);
  if (plan.mma_overridden) return;
  const LaunchShape& shape = plan.mma;
  if (shape.cluster_k > 1) {
    plan.rules.insert(plan.rules.end(), {"kClusteredWarpsK", "kMaxClusteredMTiles", "kMaxClusteredRuleSmFill", "kMinClusteredChunks",
                                         "kMinChunksPerClusteredWarp",
                                         shape.m_tiles == 1 ? "kMaxClusteredCtasPerSmOneTile" : "kMaxClusteredCtasPerSmTwoTiles"});
  }
  const LaunchShape& rule = plan.mma_rule_shape;
  const bool wave_fitted = shape.warps_n != rule.warps_n || shape.warps_k != rule.warps_k || shape.tiles_per_warp != rule.tiles_per_warp;
  if (wave_fitted) plan.rules.push_back(shape.m_tiles > kMaxPairedMTiles ? "kMaxRowPairWaves" : "kMaxTailWaves");
  if (shape.register_bounded) plan.rules.push_back("kMinRegisterBoundedWarpGain");
  if (plan.pdl == ProgrammaticLaunch::when_grid_fills && !programmatic_at_any_fill(shape)) {
    plan.rules.push_back("kProgrammaticMinSlotFraction");
  }
}

void plan_wgmma(Plan& plan, const Overrides& overrides) {
  const GemmProblem& problem = plan.problem;
  plan.wgmma = wgmma_shape_to_run(problem.m, problem.n, problem.k, plan.multiprocessors, plan.wgmma_overridden, overrides);
  if (plan.wgmma.stream_ctas > 0) plan.stream = wgmma_stream_partition(plan.wgmma, problem.n, problem.k);
  if (plan.wgmma_overridden || plan.wgmma.stream_ctas == 0) return;
  const WgmmaShape whole = choose_data_parallel_wgmma_shape(problem.m, problem.n, problem.k, plan.multiprocessors);
  switch (stream_k_reason(whole, problem.n, problem.k, plan.multiprocessors)) {
    case StreamKReason::idle: plan.rules.push_back("kWgmmaStreamMaxFill"); break;
    case StreamKReason::crowded: plan.rules.push_back("kWgmmaStreamCrowdedMaxFill"); break;
    case StreamKReason::lone_warpgroups:
    case StreamKReason::none: plan.rules.push_back("kWgmmaStreamOneWarpgroupMinChunks"); break;
  }
}

void plan_prefill(Plan& plan, const Overrides& overrides) {
  const GemmProblem& problem = plan.problem;
  plan.prefill_splits = prefill_k_splits(problem.m, problem.n, chunks_covering(problem.k), plan.multiprocessors,
                                         &plan.prefill_overridden, overrides);
  if (!plan.prefill_overridden) {
    plan.rules.insert(plan.rules.end(), {"kPrefillMaxKSplits", "kPrefillMinChunksPerSplit", "kPrefillCtaOverheadChunks", "kPrefillSplitMinGain"});
  }
}

void plan_wide(Plan& plan, const Overrides& overrides) {
  const GemmProblem& problem = plan.problem;
  const int knob = overrides.wide_ctas ? integer_knob("FP4GEMM_WIDE_CTAS", *overrides.wide_ctas, 1, 1 << 30, "a CTA count") : 0;
  const int tokens = overrides.wide_tokens ? integer_knob("FP4GEMM_WIDE_TOKENS", *overrides.wide_tokens, 128, 256, "128 or 256") : 0;
  if (tokens != 0 && tokens != 128 && tokens != 256) throw_invalid("FP4GEMM_WIDE_TOKENS must be 128 or 256, not '" + *overrides.wide_tokens + "'");
  plan.wide_overridden = knob > 0;
  plan.wide_tokens_overridden = tokens > 0;
  plan.wide_tokens = tokens > 0 ? tokens : wide_tokens(problem.m, problem.n, plan.multiprocessors);
  if (tokens == 0 && problem.m > kWideNarrowMaxM) plan.rules.insert(plan.rules.end(), {"kWideNarrowTileCost", "kWideNarrowMinGain"});
  plan.wide_ctas = wide_grid_ctas(problem.m, problem.n, plan.multiprocessors, knob, plan.wide_tokens);
}

}  // namespace

bool Plan::mma_programmatic(int resident_ctas_per_sm) const {
  if (pdl != ProgrammaticLaunch::when_grid_fills) return pdl == ProgrammaticLaunch::on;
  return programmatic_at_any_fill(mma) || grid_fills_gpu(grid_ctas(mma, problem.n), resident_ctas_per_sm, multiprocessors);
}

Plan select_plan(const GemmProblem& problem, const DeviceInfo& device, const Overrides& overrides, const ResidentCtasPerSm& occupancy,
                 bool after_copy) {
  Plan plan;
  plan.problem = problem;
  plan.sm = device.sm();
  plan.multiprocessors = device.multiprocessors;
  plan.occupancy = occupancy;
  plan.dequantize_activations = problem.activation == ActivationType::nvfp4;

  // The kernel: the rules rank wgmma ahead of mma.sync where its switch holds and tile pairs do not
  // run ahead of it; the knob or M > kMaxActivationRows (prefill) decide otherwise.
  plan.kernel = choose_decode_kernel(problem.m, problem.n, problem.k, plan.sm, plan.multiprocessors, occupancy, overrides);
  const bool switch_decides = plan.sm == 90 && problem.m <= kMaxActivationRows && !overrides.decode_kernel;
  const bool pairs_considered =
      switch_decides && occupancy && wgmma_rule_holds(problem.m, problem.n, problem.k, plan.multiprocessors) && problem.m < kWgmmaMinM;
  const bool pairs_ahead = pairs_considered && plan.kernel == DecodeKernel::mma;
  plan.kernel_rule = kernel_rule_text(plan, overrides, pairs_ahead);
  for (const DecodeKernel candidate : kKernels) {
    std::string reason = rejection_reason(candidate, plan.kernel, plan, overrides, pairs_ahead);
    if (!reason.empty()) plan.rejected.push_back({candidate, std::move(reason)});
  }
  if (switch_decides) add_kernel_rules(plan, pairs_considered, plan.rules);
  else if (plan.sm == 90 && !overrides.decode_kernel) plan.rules.insert(plan.rules.end(), {"kMaxActivationRows", "kWidePrefillMinM", "kWideMinSmFill"});

  // Its launch.
  plan.pdl = after_copy ? (programmatic_launch_policy(plan.sm, overrides), ProgrammaticLaunch::off)
                        : programmatic_launch_policy(plan.sm, overrides);
  switch (plan.kernel) {
    case DecodeKernel::mma: plan_mma(plan, overrides); break;
    case DecodeKernel::wgmma: plan_wgmma(plan, overrides); break;
    case DecodeKernel::prefill: plan_prefill(plan, overrides); break;
    case DecodeKernel::wide: plan_wide(plan, overrides); break;
  }
  return plan;
}

}  // namespace fp4gemm::cuda_nvfp4
