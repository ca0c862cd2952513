// The Plan in words: the kernel and why, its launch shape and the rule behind each choice, the
// rejected kernels, and the rules table rows that decided with their values.
#include <cstdio>
#include <sstream>

#include "backends/cuda_nvfp4/kernel_switch.hpp"
#include "backends/cuda_nvfp4/plan.hpp"
#include "backends/cuda_nvfp4/selection_rules.hpp"
#include "backends/cuda_nvfp4/weight_layout.hpp"
#include "fp4gemm/error.hpp"

namespace fp4gemm::cuda_nvfp4 {
namespace {

std::string plural(std::int64_t count, const char* one, const char* many) {
  return std::to_string(count) + " " + (count == 1 ? one : many);
}

// Why the kernel switch chose what it did.
}  // namespace

std::string kernel_rule_text(const Plan& plan, const Overrides& overrides, bool pairs_ahead) {
  const GemmProblem& problem = plan.problem;
  if (plan.sm != 90) return "the only kernel off SM 9.0, where wgmma is sm_90a code";
  if (overrides.decode_kernel) return "forced by FP4GEMM_DECODE_KERNEL";
  if (problem.m > kMaxActivationRows) {
    return "M > " + std::to_string(kMaxActivationRows) + ": the decode kernels' widest wgmma is 64 rows; the wide prefill kernel from M = " +
           std::to_string(kWidePrefillMinM) + " where its tiles fill " + std::to_string(int(kWideMinSmFill * 100)) + "% of the SMs";
  }
  const std::string rule = "SM 9.0 runs wgmma from M = " + std::to_string(kWgmmaMinM) + " when N >= " + std::to_string(kWgmmaMinN) +
                           " or N x K >= " + std::to_string(kWgmmaMinElements) + ", from M = " + std::to_string(kWgmmaFilledMinM) +
                           " when K >= " + std::to_string(kWgmmaFilledMinK) + " and its grid puts two warpgroups per CTA on " +
                           std::to_string(int(kWgmmaMinSmFill * 100)) + "% of the SMs or more or N >= " +
                           std::to_string(kWgmmaMidStreamMinN) + " and K >= " + std::to_string(kWgmmaMidStreamMinK) + ", and from M = " +
                           std::to_string(kWgmmaTallMinM) + " when N >= " + std::to_string(kWgmmaTallMinN) + " and K >= " +
                           std::to_string(kWgmmaTallMinK) + " or N >= " + std::to_string(kWgmmaTallStreamMinN) + " and K >= " +
                           std::to_string(kWgmmaTallStreamMinK);
  std::string here;
  if (in_wgmma_filled_band(problem.m, problem.k) && plan.multiprocessors > 0) {
    const WgmmaShape shape = choose_data_parallel_wgmma_shape(problem.m, problem.n, problem.k, plan.multiprocessors);
    here = " (here " + plural(wgmma_grid_ctas(shape, problem.n), "CTA", "CTAs") + " of " +
           plural(shape.warpgroups, "warpgroup", "warpgroups") + " on " + std::to_string(plan.multiprocessors) + " SMs)";
  }
  if (pairs_ahead) {
    char warps[16];
    std::snprintf(warps, sizeof warps, "%.1f", kMinPairsAheadOfStreamKWarpsPerSm);
    return "tile pairs that fit one wave run ahead of wgmma where its grid splits K and each pair warp streams at most " +
           std::to_string(kPairsAheadOfWgmmaMaxChunksPerWarp) + " chunks (against stream-K, with " + warps +
           " warps per SM or more); the wgmma rule holds here: " + rule + here;
  }
  return (plan.kernel == DecodeKernel::mma ? "not wgmma: " : "") + rule + here;
}

namespace {

std::string shape_name(const LaunchShape& shape) {
  return std::to_string(shape.warps_n) + "x" + std::to_string(shape.warps_k) + (shape.tiles_per_warp == 2 ? "x2" : "");
}

// Why the size rule (choose_launch_shape without occupancy) chose `shape`.
void describe_size_rule(const LaunchShape& shape, std::ostringstream& text) {
  if (shape.cluster_k > 1) {
    text << " (M <= " << 8 * kMaxClusteredMTiles << " on a weight of few rows: CTAs of whole row tiles would fill at most "
         << int(kMaxClusteredRuleSmFill * 100) << "% of the SMs, so K is also split over the largest cluster whose grid stays within "
         << max_clustered_ctas_per_sm(shape.m_tiles) << " CTAs per SM and leaves each warp " << kMinChunksPerClusteredWarp
         << " chunks or more; from K = " << kMinClusteredChunks * kChunkK << ")";
  } else if (shape.tiles_per_warp == 2 && (shape.warps_k == kPairedWideWarpsK || shape.warps_k == kPairedWiderWarpsK)) {
    text << " (M <= " << 8 * kMaxPairedMTiles << ": too few tile pairs to fill " << min_grid_warps_per_sm(shape.m_tiles)
         << " warps per SM at the usual K splits, but one CTA of " << shape.warps_k
         << " warps per pair covers " << int(kPairedWideMinSmFill * 100) << "% of the SMs or more in one wave; each activation load "
         << "serves 32 rows)";
  } else if (shape.tiles_per_warp == 2) {
    text << " (M <= " << 8 * kMaxPairedMTiles << " and the tile pairs still fill " << min_grid_warps_per_sm(shape.m_tiles)
         << " warps per SM: each activation load serves 32 rows)";
  } else if (shape.m_tiles <= kMaxPairedMTiles) {
    text << " (tile pairs would leave fewer than " << min_grid_warps_per_sm(shape.m_tiles) << " warps per SM)";
  }
  if (shape.tiles_per_warp == 2 && shape.warps_k == kPairedFillWarpsK) {
    text << "; K split " << kPairedFillWarpsK << " ways, not 4, so that " << kFiveWarpCtasPerSm << " CTAs per SM fill the GPU";
  } else if (shape.tiles_per_warp == 1 && shape.warps_k == kWideWarpsK) {
    text << "; K split " << kWideWarpsK << " ways, not 8, so that 2 CTAs per SM fill the GPU";
  }
}

void describe_mma(const Plan& plan, std::ostringstream& text) {
  const GemmProblem& problem = plan.problem;
  const ResidentCtasPerSm& resident_ctas_per_sm = plan.occupancy;
  const LaunchShape& rule = plan.mma_rule_shape;
  const LaunchShape& shape = plan.mma;
  const bool overridden = plan.mma_overridden;
  const bool wave_fitted = shape.warps_n != rule.warps_n || shape.warps_k != rule.warps_k ||
                           shape.tiles_per_warp != rule.tiles_per_warp || shape.cluster_k != rule.cluster_k;
  const std::int64_t cta_tiles = std::int64_t(shape.warps_n) * shape.tiles_per_warp;
  text << plural(grid_ctas(shape, problem.n), "CTA", "CTAs") << " of " << shape.warps_n << "x" << shape.warps_k << " warps ("
       << kTileRows * cta_tiles << " weight rows, K split " << plural(shape.warps_k * shape.cluster_k, "way", "ways");
  if (shape.cluster_k > 1) {
    text << ": " << shape.warps_k << " warps in each of a cluster of " << shape.cluster_k
         << " CTAs, summed through distributed shared memory";
  }
  text << "), " << plural(shape.tiles_per_warp, "weight tile", "weight tiles") << " of 16 rows per warp";
  if (overridden) {
    text << " [FP4GEMM_DECODE_SHAPE]";
  } else if (is_many_tile_pair(shape)) {
    char warps[32];
    std::snprintf(warps, sizeof warps, "%.1f", resident_warps_per_sm(shape, problem.n, plan.multiprocessors, resident_ctas_per_sm));
    text << " (tile pairs: each activation load serves 32 weight rows, half the L1 work that binds MMA passes of "
         << 8 * (kMaxPairedMTiles + 1) << "-" << 8 * kRegisterBoundedMTiles << " rows; this grid fits one wave at " << warps
         << " warps per SM, at least " << min_many_tile_pair_warps_per_sm(problem.m)
         << (problem.m >= kMinManyTilePairsM ? "" : " below M = " + std::to_string(kMinManyTilePairsM)) << ")";
  } else if (wave_fitted) {
    char waves[32];
    LaunchShape rule_form = rule;  // the size rule's shape in the form (bounded or not) the grid was fitted in
    rule_form.register_bounded = shape.register_bounded;
    std::snprintf(waves, sizeof waves, "%.2f", shape_waves(rule_form, problem.n, plan.multiprocessors, resident_ctas_per_sm));
    text << "; not the size rule's " << shape_name(rule) << ", whose grid of " << grid_ctas(rule, problem.n) << " CTAs would take "
         << waves << " waves of the GPU's resident slots; ";
    const double waves_here = shape_waves(shape, problem.n, plan.multiprocessors, resident_ctas_per_sm);
    if (waves_here <= 1.0) {
      text << "this grid fits one";
    } else {
      std::snprintf(waves, sizeof waves, "%.2f", waves_here);
      text << "this grid takes " << waves << ", with more warps resident per SM";
    }
  } else {
    describe_size_rule(shape, text);
    if (!resident_ctas_per_sm) {
      text << " (the size rule's shape: on the GPU itself, a grid of 1-" << kMaxTailWaves << " waves of the kernel's resident slots ("
           << kMaxRowPairWaves << " for MMA passes of " << 8 * (kMaxPairedMTiles + 1) << "-" << 8 * kMaxRowPairMTiles
           << " rows) takes a one-wave alternative)";
    }
  }
  if (shape.register_bounded) {
    char gain[16];
    std::snprintf(gain, sizeof gain, "%.2g", kMinRegisterBoundedWarpGain);
    text << "; registers bounded for " << kRegisterBoundedWarpsPerSm << " warps per SM"
         << (overridden ? "" : std::string(" (its grid keeps more than ") + gain + "x the warps per SM of the unbounded kernel's)");
  }
  text << ", activation rows in MMA passes of " << 8 * shape.m_tiles;
}

void describe_wgmma(const Plan& plan, std::ostringstream& text) {
  const GemmProblem& problem = plan.problem;
  const WgmmaShape& shape = plan.wgmma;
  const bool overridden = plan.wgmma_overridden;
  const std::int64_t rows = 64 * std::int64_t(shape.warpgroups);
  const StreamKPartition& partition = plan.stream;
  const std::int64_t ctas = shape.stream_ctas > 0 ? partition.ctas : wgmma_grid_ctas(shape, problem.n);
  const std::string ctas_text = plural(ctas, "CTA", "CTAs") + " of " + plural(shape.warpgroups, "warpgroup", "warpgroups") + " (" +
                                std::to_string(rows) + " weight rows) and two producer warps";
  text << "activations packed for " << shape.tokens << " tokens, then ";
  if (shape.stream_ctas > 0) {
    const std::int64_t fewest = partition.units() / partition.ctas;
    text << "a stream-K grid of " << ctas_text << " sharing the " << plural(partition.row_blocks, "row block", "row blocks") << " x "
         << plural(partition.chunks, "chunk", "chunks") << " evenly (" << fewest;
    if (partition.units() % partition.ctas != 0) text << "-" << fewest + 1;
    text << " chunks each; a row block split between CTAs is summed by the CTA of its last chunk, in CTA order)";
  } else {
    text << ctas_text << ", "
         << (shape.splits == 1 ? std::string("K not split") : "K split " + plural(shape.splits, "way", "ways") + " in a cluster");
  }
  if (shape.multicast > 1) text << ", activation copies multicast over " << shape.multicast << " CTAs";
  if (overridden) {
    text << " [FP4GEMM_WGMMA_SHAPE / FP4GEMM_WGMMA_STREAM]";
  } else if (shape.stream_ctas > 0) {
    // Why not the data-parallel grid (stream_k_reason, the rule's own).
    const WgmmaShape whole = choose_data_parallel_wgmma_shape(problem.m, problem.n, problem.k, plan.multiprocessors);
    text << ", not the data-parallel grid of " << plural(wgmma_grid_ctas(whole, problem.n), "CTA", "CTAs") << " of "
         << plural(whole.warpgroups, "warpgroup", "warpgroups");
    const int busy = int(wgmma_grid_fill(whole, problem.n, plan.multiprocessors) * 100 + 0.5);
    switch (stream_k_reason(whole, problem.n, problem.k, plan.multiprocessors)) {
      case StreamKReason::idle:
        text << ", which would keep the SMs busy " << busy << "% of its time (stream-K below " << int(kWgmmaStreamMaxFill * 100) << "%)";
        break;
      case StreamKReason::crowded:
        text << ", which would put two CTAs on some SMs and one on others, keeping them busy " << busy << "% of its time (stream-K below "
             << int(kWgmmaStreamCrowdedMaxFill * 100) << "% where its CTAs fit " << stream_k_ctas_per_sm(shape.tokens) << " per SM)";
        break;
      case StreamKReason::lone_warpgroups:
      case StreamKReason::none:  // not reached: the rule streams only for a reason
        text << ", which would run one warpgroup per SM over " << plural(partition.chunks, "chunk", "chunks") << " (stream-K from "
             << kWgmmaStreamOneWarpgroupMinChunks << ")";
        break;
    }
  }
  if (wgmma_one_cta_per_sm(ctas, plan.multiprocessors)) {
    text << "; one CTA per SM (the grid fits the " << plan.multiprocessors
         << " SMs; a second slot per SM would let the next call's CTAs pile onto busy SMs)";
  }
}

void describe_prefill(const Plan& plan, std::ostringstream& text) {
  const std::int64_t tiles = prefill_tiles(plan.problem.m, plan.problem.n);
  const int splits = plan.prefill_splits;
  const bool forced = plan.prefill_overridden;
  text << plural(tiles, "tile", "tiles") << " of " << kPrefillCtaTokens << " activation rows x " << kPrefillCtaRows
       << " weight rows, " << kPrefillDecodeWarps
       << " warps per CTA decoding whole chunks in turn into BF16 in shared memory for two warpgroups of wgmma.m64n128k16";
  const auto waves = [&](std::int64_t ctas) {
    char formatted[32];
    std::snprintf(formatted, sizeof formatted, "%.2f", double(ctas) / plan.multiprocessors);
    return std::string(formatted);
  };
  if (splits > 1) {
    text << "; K split " << splits << " ways" << (forced ? " [FP4GEMM_PREFILL_SPLITS]" : "") << ", "
         << plural(tiles * splits, "CTA", "CTAs");
    if (plan.multiprocessors > 0 && !forced) {
      text << " (" << waves(tiles * splits) << " waves on " << plan.multiprocessors << " SMs, one CTA each, against "
           << waves(tiles) << " unsplit)";
    }
    text << ", each tile's last CTA adding the partial sums in split order";
  } else {
    text << ", one CTA per tile" << (forced ? " [FP4GEMM_PREFILL_SPLITS]" : "");
    if (plan.multiprocessors > 0) text << " (" << waves(tiles) << " waves on " << plan.multiprocessors << " SMs)";
  }
}

void describe_wide(const Plan& plan, std::ostringstream& text) {
  const std::int64_t tiles = wide_tiles(plan.problem.m, plan.problem.n, plan.wide_tokens);
  text << plural(tiles, "tile", "tiles") << " of " << plan.wide_tokens << " activation rows"
       << (plan.wide_tokens_overridden ? " [FP4GEMM_WIDE_TOKENS]" : "") << " x " << kWideCtaRows
       << " weight rows, handed out " << kWideRasterTokenBlocks
       << " activation blocks at a time; two warpgroups decode their 64 weight rows in registers as wgmma.m64n"
       << plan.wide_tokens << "k16's A, the activations bulk-copied into a shared-memory ring as its B; a persistent grid of "
       << plural(plan.wide_ctas, "CTA", "CTAs") << (plan.wide_overridden ? " [FP4GEMM_WIDE_CTAS]" : "");
  if (plan.multiprocessors > 0) {
    char waves[32];
    std::snprintf(waves, sizeof waves, "%.2f", double(tiles) / plan.multiprocessors);
    text << " (" << waves << " tiles per SM on " << plan.multiprocessors << " SMs)";
  }
}

// Whether the kernel is launched with programmatic dependent launch, and by which rule.
// `mma_shape`: the mma.sync kernel's shape (for DecodeKernel::mma).
std::string describe_programmatic_launch(ProgrammaticLaunch policy, DecodeKernel kernel, const LaunchShape& mma_shape, int sm) {
  if (sm < 90) return "no programmatic dependent launch (SM 9.0 and newer)";
  if (policy == ProgrammaticLaunch::off) return "no programmatic dependent launch [FP4GEMM_PDL=0]";
  if (policy == ProgrammaticLaunch::on) return "programmatic dependent launch [FP4GEMM_PDL=1]";
  if (kernel != DecodeKernel::mma) return "programmatic dependent launch (the next kernel enters after the main loop)";
  if (programmatic_at_any_fill(mma_shape)) return "programmatic dependent launch (a clustered grid takes it at any fill)";
  return "programmatic dependent launch when the grid fills " + std::to_string(int(kProgrammaticMinSlotFraction * 100)) +
         "% of the GPU's resident CTA slots (the kernel's occupancy, checked at launch)";
}


// A rule's value as the table gives it (33, 0.8, 16777216).
std::string rule_value_text(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.10g", value);
  return text;
}

}  // namespace

std::string Plan::to_string(const std::string& device_note) const {
  std::ostringstream text;
  if (dequantize_activations) text << "NVFP4 activations dequantized to BF16 first (exact); ";
  text << decode_kernel_name(kernel) << " kernel (" << kernel_rule << "): ";
  switch (kernel) {
    case DecodeKernel::mma: describe_mma(*this, text); break;
    case DecodeKernel::wgmma: describe_wgmma(*this, text); break;
    case DecodeKernel::prefill: describe_prefill(*this, text); break;
    case DecodeKernel::wide: describe_wide(*this, text); break;
  }
  text << "; " << describe_programmatic_launch(pdl, kernel, mma, sm) << device_note;
  // NOTE: the continuation lines are indented to follow explain's "kernel:   " label.
  if (!rejected.empty()) {
    text << "\n          not:   ";
    for (std::size_t i = 0; i < rejected.size(); ++i) {
      text << (i > 0 ? "; " : "") << decode_kernel_name(rejected[i].kernel) << " (" << rejected[i].reason << ")";
    }
  }
  if (!rules.empty()) {
    text << "\n          rules: ";
    for (std::size_t i = 0; i < rules.size(); ++i) text << (i > 0 ? ", " : "") << rules[i] << " = " << rule_value_text(selection_rule(rules[i]));
    text << " (fp4gemm explain --rules: why each)";
  }
  return text.str();
}

std::string describe_plan(const GemmProblem& problem, const DeviceInfo& device, const Overrides& overrides,
                          const ResidentCtasPerSm& occupancy) {
  try {
    return select_plan(problem, device, overrides, occupancy).to_string();
  } catch (const Error& error) {
    return std::string("cannot plan: ") + error.what();
  }
}

std::string describe_selection_rules() {
  std::ostringstream text;
  std::string_view group;
  for (const SelectionRule& rule : kSelectionRules) {
    if (rule.group != group) {
      group = rule.group;
      text << (text.tellp() > 0 ? "\n" : "") << group << ":\n";
    }
    text << "  " << rule.name << " = " << rule_value_text(rule.value) << ": " << rule.decides << "\n    evidence: " << rule.evidence
         << "\n";
  }
  return text.str();
}

}  // namespace fp4gemm::cuda_nvfp4
