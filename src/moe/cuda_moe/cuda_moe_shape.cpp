#include "moe/cuda_moe/cuda_moe_shape.hpp"

#include <algorithm>

#include "fp4gemm/error.hpp"

namespace fp4gemm::moe::cuda_moe {
namespace {

constexpr std::size_t kArrayAlignment = 256;
constexpr std::int64_t kMaxGridY = 65535;

// Appends an array of `bytes` to the layout and returns its offset.
std::size_t place(std::size_t& total, std::size_t bytes) {
  const std::size_t offset = (total + kArrayAlignment - 1) / kArrayAlignment * kArrayAlignment;
  total = offset + bytes;
  return offset;
}

}  // namespace

ExpertKernel choose_expert_kernel(const std::optional<std::string>& knob) {
  if (!knob) return ExpertKernel::automatic;
  if (*knob == "streaming") return ExpertKernel::streaming;
  if (*knob == "staged") return ExpertKernel::staged;
  if (*knob == "mma") return ExpertKernel::mma;
  if (*knob == "wide") return ExpertKernel::wide;
  throw_invalid("FP4GEMM_MOE_EXPERT_KERNEL must be streaming, staged, mma or wide, not '" + *knob + "'");
}

const char* expert_kernel_name(ExpertKernel kernel) {
  switch (kernel) {
    case ExpertKernel::streaming: return "streaming";
    case ExpertKernel::staged: return "staged";
    case ExpertKernel::mma: return "mma";
    case ExpertKernel::wide: return "wide";
    case ExpertKernel::automatic: return "auto";
  }
  return "?";
}

std::int64_t mma_row_blocks(std::int64_t out_rows, bool gate_up) {
  const std::int64_t rows_per_block = mma_rows_per_block(gate_up);
  return (out_rows + rows_per_block - 1) / rows_per_block;
}

int mma_entry_tiles(std::int64_t entries_per_group, const std::optional<std::string>& knob) {
  if (knob) {
    if (*knob == "1" || *knob == "2" || *knob == "4") return std::stoi(*knob);
    throw_invalid("FP4GEMM_MOE_MMA_ENTRY_TILES must be 1, 2 or 4, not '" + *knob + "'");
  }
  if (entries_per_group <= kMmaOneTileEntries) return 1;
  return entries_per_group <= kMmaTwoTileEntries ? 2 : 4;
}

bool mma_pipelined(int entry_tiles, const std::optional<std::string>& knob) {
  if (knob && *knob != "0" && *knob != "1") throw_invalid("FP4GEMM_MOE_MMA_PIPELINE must be 0 or 1, not '" + *knob + "'");
  if (knob) return *knob == "1" && entry_tiles <= 2;
  return entry_tiles == 1;
}

int mma_warps_k(std::int64_t largest_grid_blocks, int multiprocessors, int entry_tiles, const std::optional<std::string>& knob) {
  if (knob && *knob != "2" && *knob != "3" && *knob != "4") {
    throw_invalid("FP4GEMM_MOE_MMA_WARPS_K must be 2, 3 or 4, not '" + *knob + "'");
  }
  if (entry_tiles != 1) return kMmaWarpsK;
  if (knob) return std::stoi(*knob);
  const std::int64_t resident = std::int64_t(multiprocessors) * (kMmaWarpsPerSm / kMmaFewWarpsK);
  return multiprocessors > 0 && largest_grid_blocks <= kMmaFewWarpsMaxWaves * resident ? kMmaFewWarpsK : kMmaWarpsK;
}

std::int64_t expected_entries_per_expert(const MoeProblem& problem) {
  const std::int64_t entries = problem.tokens * problem.top_k;
  return entries == 0 ? 0 : entries / std::min(problem.experts, entries);
}

bool wide_experts_take(const MoeProblem& problem, int sm, ExpertKernel asked) {
  if (asked != ExpertKernel::automatic && asked != ExpertKernel::wide) return false;
  if (sm != 90 || problem.activation != ActivationType::bf16 || problem.hidden % 64 != 0 || problem.intermediate % 64 != 0) return false;
  const std::int64_t entries = problem.tokens * problem.top_k;
  if (entries == 0 || wide_token_blocks(entries, problem.experts, 32) > kMaxGridY) return false;
  return asked == ExpertKernel::wide || expected_entries_per_expert(problem) >= kWideMinEntries;
}

int wide_block_entries(std::int64_t entries_per_expert, const std::optional<std::string>& knob) {
  if (knob) {
    if (*knob == "32" || *knob == "64" || *knob == "128") return std::stoi(*knob);
    throw_invalid("FP4GEMM_MOE_WIDE_ENTRIES must be 32, 64 or 128, not '" + *knob + "'");
  }
  return entries_per_expert <= 32 ? 32 : entries_per_expert <= 64 ? 64 : kWideEntries;
}

std::int64_t wide_token_blocks(std::int64_t entries, std::int64_t experts, int block_entries) {
  return entries / block_entries + std::min(experts, entries);
}

bool router_gemm_takes(std::int64_t tokens, const std::optional<std::string>& knob) {
  if (knob && *knob != "gemm" && *knob != "kernel") throw_invalid("FP4GEMM_MOE_ROUTER must be gemm or kernel, not '" + *knob + "'");
  if (knob) return *knob == "gemm";
  return tokens >= kRouterGemmMinTokens;
}

std::int64_t router_gemm_scratch_doubles(std::int64_t tokens, std::int64_t hidden, std::int64_t experts) {
  return tokens * hidden + experts * hidden + tokens * experts;
}

bool moe_programmatic_launch(int sm, const std::optional<std::string>& knob) {
  if (knob && *knob != "0" && *knob != "1") throw_invalid("FP4GEMM_MOE_PDL must be 0 or 1, not '" + *knob + "'");
  return sm >= 90 && !(knob && *knob == "0");
}

GroupedGrid grouped_grid(std::int64_t rows, std::int64_t experts, std::int64_t entries, int rows_per_warp) {
  GroupedGrid grid;
  const std::int64_t rows_per_block = std::int64_t(kWarpsPerBlock) * rows_per_warp;
  grid.row_tiles = (rows + rows_per_block - 1) / rows_per_block;
  grid.expert_slots = std::min(experts, entries);
  return grid;
}

SingleGroupSplit single_group_split(std::int64_t entries) {
  const std::int64_t chunks = (entries + kTokensPerChunk - 1) / kTokensPerChunk;
  const std::int64_t chunks_per_slot = std::max<std::int64_t>(1, (chunks + kMaxGridY - 1) / kMaxGridY);
  SingleGroupSplit split;
  split.slice = chunks_per_slot * kTokensPerChunk;
  split.slots = (entries + split.slice - 1) / split.slice;
  return split;
}

WorkspaceLayout workspace_layout(const MoeProblem& problem, int wide_entries, bool router_gemm) {
  const auto tokens = std::size_t(problem.tokens), experts = std::size_t(problem.experts);
  const std::size_t entries = tokens * std::size_t(problem.top_k);
  const std::size_t hidden = std::size_t(problem.hidden), intermediate = std::size_t(problem.intermediate);
  const std::size_t routed = problem.routing_given ? 0 : entries;
  const bool shared = problem.shared_expert;
  WorkspaceLayout layout;
  std::size_t& total = layout.total;
  layout.logits = place(total, problem.routing_given ? 0 : tokens * experts * sizeof(float));
  layout.topk_ids = place(total, routed * sizeof(std::int32_t));
  layout.topk_weights = place(total, routed * sizeof(float));
  layout.counts = place(total, experts * sizeof(std::int32_t));
  layout.offsets = place(total, (experts + 1) * sizeof(std::int32_t));
  layout.cursor = place(total, experts * sizeof(std::int32_t));
  layout.active = place(total, experts * sizeof(std::int32_t));
  layout.active_count = place(total, sizeof(std::int32_t));
  layout.entry_token = place(total, entries * sizeof(std::int32_t));
  layout.entry_of = place(total, entries * sizeof(std::int32_t));
  layout.intermediate = place(total, entries * intermediate * sizeof(float));
  layout.expert_out = place(total, entries * hidden * sizeof(float));
  layout.shared_intermediate = place(total, shared ? tokens * std::size_t(problem.shared_intermediate) * sizeof(float) : 0);
  layout.shared_out = place(total, shared ? tokens * hidden * sizeof(float) : 0);
  layout.shared_weight = place(total, shared ? tokens * sizeof(float) : 0);
  const std::size_t blocks = wide_entries > 0 ? std::size_t(wide_token_blocks(std::int64_t(entries), problem.experts, wide_entries)) : 0;
  const std::size_t chunks = (std::max(hidden, intermediate) + 63) / 64;
  layout.wide_blocks = place(total, blocks == 0 ? 0 : (blocks + 1) * 4 * sizeof(std::int32_t));
  layout.wide_packed = place(total, blocks * chunks * std::size_t(wide_entries) * 64 * 2);
  const bool gemm = router_gemm && !problem.routing_given;
  layout.router_gemm = place(total, gemm ? std::size_t(router_gemm_scratch_doubles(problem.tokens, problem.hidden, problem.experts)) * 8 : 0);
  return layout;
}

}  // namespace fp4gemm::moe::cuda_moe
