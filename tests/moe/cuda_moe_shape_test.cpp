// The host-side formulas of the `cuda_moe` backend (src/moe/cuda_moe/cuda_moe_shape.hpp): launch
// grids, the per-call workspace, the staging tile; and where cuda_moe stands in the MoE auto order.
// These run on every machine; the kernels themselves are tested on the GPU (tests/gpu/moe).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <utility>
#include <vector>

#include "fp4gemm/error.hpp"
#include "fp4gemm/moe/moe_runner.hpp"
#include "moe/cuda_moe/cuda_moe_shape.hpp"
#ifdef FP4GEMM_WITH_CUDA
#include "moe/cuda_moe/cuda_moe_backend.hpp"
#endif
#include "moe/moe_preference.hpp"

namespace fp4gemm::moe::cuda_moe {
namespace {

MoeProblem problem(std::int64_t tokens, int k, bool routing_given, bool shared) {
  MoeProblem p;
  p.tokens = tokens;
  p.hidden = 4096;
  p.intermediate = 1024;
  p.experts = 512;
  p.top_k = k;
  p.routing_given = routing_given;
  p.shared_expert = shared;
  p.shared_intermediate = shared ? 512 : 0;
  return p;
}

TEST(CudaMoeShape, GroupedGridCoversEveryRowAndTheMostExpertsThatCanBeActive) {
  const GroupedGrid decode = grouped_grid(1024, 512, 10);  // T = 1, k = 10: at most 10 experts
  EXPECT_EQ(decode.row_tiles, 1024 / kWarpsPerBlock);
  EXPECT_EQ(decode.expert_slots, 10);
  const GroupedGrid prefill = grouped_grid(4096, 512, 40960);
  EXPECT_EQ(prefill.expert_slots, 512);
  EXPECT_EQ(grouped_grid(17, 5, 3).row_tiles, 3);  // a partial last tile
  EXPECT_EQ(grouped_grid(16, 5, 3).row_tiles, 2);
  // The streaming kernel's down launch: kDownRowsPerWarp rows per warp.
  EXPECT_EQ(grouped_grid(4096, 512, 10, kDownRowsPerWarp).row_tiles, 4096 / (kWarpsPerBlock * kDownRowsPerWarp));
  EXPECT_EQ(grouped_grid(4096 + 1, 512, 10, kDownRowsPerWarp).row_tiles, 4096 / (kWarpsPerBlock * kDownRowsPerWarp) + 1);
  // CUDA's grid.y limit: every expert count the backend routes fits.
  EXPECT_LE(grouped_grid(16, kMaxExperts, 1 << 30).expert_slots, 65535);
}

TEST(CudaMoeShape, SharedExpertSlicesCoverEveryTokenOnceWithinTheGrid) {
  for (std::int64_t tokens : {1, 7, 8, 9, 4096, 524280, 3000000}) {
    const SingleGroupSplit split = single_group_split(tokens);
    EXPECT_EQ(split.slice % kTokensPerChunk, 0) << tokens;
    EXPECT_LE(split.slots, 65535) << tokens;
    EXPECT_GE(split.slots * split.slice, tokens) << tokens;        // every token in a slice
    EXPECT_LT((split.slots - 1) * split.slice, tokens) << tokens;  // no empty slice
  }
  EXPECT_EQ(single_group_split(4096).slots, 512);  // one chunk of 8 tokens per block
  EXPECT_EQ(single_group_split(1).slots, 1);
}

TEST(CudaMoeShape, WorkspaceArraysAreAlignedDisjointAndSizedForTheCall) {
  for (const MoeProblem& p : {problem(1, 10, false, false), problem(7, 3, true, true), problem(4096, 10, false, true)}) {
    const WorkspaceLayout layout = workspace_layout(p);
    const std::size_t entries = std::size_t(p.tokens * p.top_k), tokens = std::size_t(p.tokens);
    const std::size_t routed = p.routing_given ? 0 : entries;
    const std::size_t shared = p.shared_expert ? 1 : 0;
    // (offset, bytes) of every array, in layout order.
    const std::vector<std::pair<std::size_t, std::size_t>> arrays = {
        {layout.logits, p.routing_given ? 0 : tokens * std::size_t(p.experts) * 4},
        {layout.topk_ids, routed * 4},
        {layout.topk_weights, routed * 4},
        {layout.counts, std::size_t(p.experts) * 4},
        {layout.offsets, std::size_t(p.experts + 1) * 4},
        {layout.cursor, std::size_t(p.experts) * 4},
        {layout.active, std::size_t(p.experts) * 4},
        {layout.active_count, 4},
        {layout.entry_token, entries * 4},
        {layout.entry_of, entries * 4},
        {layout.intermediate, entries * std::size_t(p.intermediate) * 4},
        {layout.expert_out, entries * std::size_t(p.hidden) * 4},
        {layout.shared_intermediate, shared * tokens * std::size_t(p.shared_intermediate) * 4},
        {layout.shared_out, shared * tokens * std::size_t(p.hidden) * 4},
        {layout.shared_weight, shared * tokens * 4},
        {layout.wide_blocks, 0},
        {layout.wide_packed, 0},
        {layout.router_gemm, 0}};
    std::size_t end = 0;
    for (const auto& [offset, bytes] : arrays) {
      EXPECT_EQ(offset % 256, 0u) << p.to_string();
      EXPECT_GE(offset, end) << p.to_string() << ": arrays overlap";
      end = offset + bytes;
    }
    EXPECT_EQ(layout.total, end) << p.to_string();
  }
  // The decode step of the layer needs well under a MiB; the largest prefill ~ 0.9 GB.
  EXPECT_LT(workspace_layout(problem(1, 10, false, false)).total, std::size_t(1) << 20);
  EXPECT_GT(workspace_layout(problem(4096, 10, false, true)).total, std::size_t(40960) * 4096 * 4);
}

// The default is automatic (the tensor-core kernel, measured fastest of the three CUDA-core and
// mma.sync ones on an H100 at T = 1 to 512, handing busy routed experts to the wide kernel).
TEST(CudaMoeShape, TheExpertKernelKnobTakesStreamingStagedMmaOrWideAndDefaultsToAutomatic) {
  EXPECT_EQ(choose_expert_kernel(std::nullopt), ExpertKernel::automatic);
  EXPECT_EQ(choose_expert_kernel(std::string("streaming")), ExpertKernel::streaming);
  EXPECT_EQ(choose_expert_kernel(std::string("staged")), ExpertKernel::staged);
  EXPECT_EQ(choose_expert_kernel(std::string("mma")), ExpertKernel::mma);
  EXPECT_EQ(choose_expert_kernel(std::string("wide")), ExpertKernel::wide);
  try {
    choose_expert_kernel(std::string("fast"));
    FAIL() << "a bad knob value was accepted";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("FP4GEMM_MOE_EXPERT_KERNEL must be streaming, staged, mma or wide, not 'fast'"),
              std::string::npos)
        << error.what();
  }
  EXPECT_STREQ(expert_kernel_name(ExpertKernel::staged), "staged");
  EXPECT_STREQ(expert_kernel_name(ExpertKernel::streaming), "streaming");
  EXPECT_STREQ(expert_kernel_name(ExpertKernel::mma), "mma");
  EXPECT_STREQ(expert_kernel_name(ExpertKernel::automatic), "auto");
}

// Programmatic dependent launches: SM 9.0 and newer by default, off with FP4GEMM_MOE_PDL=0, never
// before SM 9.0 (no PDL there); other knob values are refused by name.
// The wide kernel: taken by default on SM 9.0 from kWideMinEntries expected entries per active
// expert (Qwen3.5-397B-A17B's layer: T = 4096 has 80, T = 1024 20, T = 512 10), forced anywhere it
// can run, never when mma is asked for by name, off SM 9.0, for x other than BF16 or for H / I not
// multiples of 64; its workspace holds every token block it can fill.
TEST(CudaMoeShape, TheWideKernelServesBusyExpertsOnSm90Only) {
  const MoeProblem prefill = problem(4096, 10, true, false), smaller = problem(512, 10, true, false);
  EXPECT_TRUE(wide_experts_take(prefill, 90, ExpertKernel::automatic));
  EXPECT_TRUE(wide_experts_take(problem(1024, 10, true, false), 90, ExpertKernel::automatic));
  EXPECT_FALSE(wide_experts_take(smaller, 90, ExpertKernel::automatic));
  EXPECT_FALSE(wide_experts_take(prefill, 90, ExpertKernel::mma));
  EXPECT_TRUE(wide_experts_take(smaller, 90, ExpertKernel::wide));
  EXPECT_TRUE(wide_experts_take(problem(1, 10, true, false), 90, ExpertKernel::wide));
  EXPECT_FALSE(wide_experts_take(prefill, 89, ExpertKernel::wide));
  EXPECT_FALSE(wide_experts_take(prefill, 100, ExpertKernel::wide));
  EXPECT_FALSE(wide_experts_take(prefill, 90, ExpertKernel::staged));
  MoeProblem odd = prefill;
  odd.intermediate = 1040;
  EXPECT_FALSE(wide_experts_take(odd, 90, ExpertKernel::wide));
  MoeProblem fp32 = prefill;
  fp32.activation = ActivationType::f32;
  EXPECT_FALSE(wide_experts_take(fp32, 90, ExpertKernel::wide));
  // Every expert's last block may be partial: 320 full blocks plus one per active expert.
  EXPECT_EQ(wide_token_blocks(40960, 512), 320 + 512);
  EXPECT_EQ(wide_token_blocks(3, 512), 3);
  EXPECT_EQ(wide_row_blocks(1024, true), 16);
  EXPECT_EQ(wide_row_blocks(4096, false), 32);
  EXPECT_EQ(wide_row_blocks(320, false), 3);
  EXPECT_EQ(wide_token_blocks(40960, 512, 32), 1280 + 512);
  // The block holds the expected entries per expert: 32 up to 32, 64 up to 64, else 128.
  EXPECT_EQ(wide_block_entries(1), 32);
  EXPECT_EQ(wide_block_entries(32), 32);
  EXPECT_EQ(wide_block_entries(40), 64);
  EXPECT_EQ(wide_block_entries(80), 128);
  EXPECT_EQ(wide_block_entries(80, std::string("32")), 32);
  EXPECT_THROW(wide_block_entries(80, std::string("48")), Error);
  const WorkspaceLayout plain = workspace_layout(prefill), wide = workspace_layout(prefill, 128);
  EXPECT_EQ(wide.wide_packed - wide.wide_blocks >= (320 + 512 + 1) * 16, true);
  EXPECT_EQ(wide.total - wide.wide_packed, std::size_t(320 + 512) * (4096 / 64) * 128 * 64 * 2);
  const WorkspaceLayout narrow = workspace_layout(prefill, 32);
  EXPECT_EQ(narrow.total - narrow.wide_packed, std::size_t(1280 + 512) * (4096 / 64) * 32 * 64 * 2);
  EXPECT_EQ(wide.wide_packed % 256, 0u);
  EXPECT_LT(plain.total, wide.wide_blocks + 256);
}

// The router GEMM from kRouterGemmMinTokens (or as FP4GEMM_MOE_ROUTER says), its FP64 scratch in
// the workspace only when the router routes with it.
TEST(CudaMoeShape, TheRouterRunsAsAGemmFromManyTokens) {
  EXPECT_FALSE(router_gemm_takes(kRouterGemmMinTokens - 1));
  EXPECT_TRUE(router_gemm_takes(kRouterGemmMinTokens));
  EXPECT_TRUE(router_gemm_takes(1, std::string("gemm")));
  EXPECT_FALSE(router_gemm_takes(4096, std::string("kernel")));
  try {
    router_gemm_takes(1, std::string("fast"));
    FAIL() << "a bad knob value was accepted";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("FP4GEMM_MOE_ROUTER must be gemm or kernel, not 'fast'"), std::string::npos) << error.what();
  }
  EXPECT_EQ(router_gemm_scratch_doubles(4096, 4096, 512), 4096 * 4096 + 512 * 4096 + 4096 * 512);
  const MoeProblem routed = problem(4096, 10, false, false), given = problem(4096, 10, true, false);
  const WorkspaceLayout with_gemm = workspace_layout(routed, 0, true);
  EXPECT_EQ(with_gemm.total - with_gemm.router_gemm, std::size_t(router_gemm_scratch_doubles(4096, 4096, 512)) * 8);
  EXPECT_EQ(with_gemm.router_gemm % 256, 0u);
  EXPECT_EQ(workspace_layout(given, 0, true).total, workspace_layout(given).total);
}

TEST(CudaMoeShape, ProgrammaticLaunchOnSm90AndNewerUnlessTheKnobSaysZero) {
  EXPECT_TRUE(moe_programmatic_launch(90));
  EXPECT_TRUE(moe_programmatic_launch(100));
  EXPECT_FALSE(moe_programmatic_launch(89));
  EXPECT_FALSE(moe_programmatic_launch(80));
  EXPECT_FALSE(moe_programmatic_launch(90, std::string("0")));
  EXPECT_TRUE(moe_programmatic_launch(90, std::string("1")));
  EXPECT_FALSE(moe_programmatic_launch(80, std::string("1")));
  try {
    moe_programmatic_launch(90, std::string("yes"));
    FAIL() << "a bad knob value was accepted";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("FP4GEMM_MOE_PDL must be 0 or 1, not 'yes'"), std::string::npos) << error.what();
  }
}

// The tensor-core kernel's K split: 2 warps a block where the larger grid fits two waves of such
// blocks (T = 1 of Qwen3.5-397B-A17B's layer: 1280 down blocks on 132 SMs), else 4 (T = 8: 10240),
// and always 4 for passes of more than one entry tile; without an SM count, 4.
TEST(CudaMoeShape, TheTensorCoreKernelSplitsKOverFewerWarpsForAShortGrid) {
  EXPECT_EQ(mma_warps_k(128 * 10, 132, 1), kMmaFewWarpsK);
  EXPECT_EQ(mma_warps_k(128 * 80, 132, 1), kMmaWarpsK);
  EXPECT_EQ(mma_warps_k(std::int64_t(kMmaFewWarpsMaxWaves) * 132 * (kMmaWarpsPerSm / kMmaFewWarpsK), 132, 1), kMmaFewWarpsK);
  EXPECT_EQ(mma_warps_k(std::int64_t(kMmaFewWarpsMaxWaves) * 132 * (kMmaWarpsPerSm / kMmaFewWarpsK) + 1, 132, 1), kMmaWarpsK);
  EXPECT_EQ(mma_warps_k(128 * 10, 132, 2), kMmaWarpsK);
  EXPECT_EQ(mma_warps_k(128 * 10, 0, 1), kMmaWarpsK);
  EXPECT_EQ(mma_warps_k(128 * 80, 132, 1, std::string("2")), 2);
  EXPECT_EQ(mma_warps_k(128 * 10, 132, 1, std::string("4")), 4);
  EXPECT_EQ(mma_warps_k(128 * 10, 132, 1, std::string("3")), 3);
  EXPECT_EQ(mma_warps_k(128 * 10, 132, 4, std::string("2")), kMmaWarpsK);  // one entry tile only
  try {
    mma_warps_k(1, 132, 1, std::string("8"));
    FAIL() << "a bad knob value was accepted";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("FP4GEMM_MOE_MMA_WARPS_K must be 2, 3 or 4, not '8'"), std::string::npos) << error.what();
  }
}

// The tensor-core kernel: 16 outputs (gate and up rows) or 32 down rows a block, the last block
// partial; two entry tiles a pass above 5 expected entries per group, four above 32.
TEST(CudaMoeShape, TensorCoreBlocksCoverEveryRowAndTakeMoreEntryTilesForBusierExperts) {
  EXPECT_EQ(mma_row_blocks(1024, true), 64);   // Qwen3.5-397B-A17B gate_up, I = 1024
  EXPECT_EQ(mma_row_blocks(4096, false), 128);  // its down, H = 4096
  EXPECT_EQ(mma_row_blocks(48, true), 3);
  EXPECT_EQ(mma_row_blocks(48, false), 2);
  EXPECT_EQ(mma_row_blocks(1, false), 1);
  EXPECT_EQ(mma_entry_tiles(1), 1);
  EXPECT_EQ(mma_entry_tiles(kMmaOneTileEntries), 1);
  EXPECT_EQ(mma_entry_tiles(kMmaOneTileEntries + 1), 2);
  EXPECT_EQ(mma_entry_tiles(5), 1);  // T = 256 of E = 512, k = 10
  EXPECT_EQ(mma_entry_tiles(6), 2);  // T = 320
  EXPECT_EQ(mma_entry_tiles(10), 2);  // T = 512 of E = 512, k = 10
  EXPECT_EQ(mma_entry_tiles(kMmaTwoTileEntries), 2);
  EXPECT_EQ(mma_entry_tiles(kMmaTwoTileEntries + 1), kMmaMaxEntryTiles);
  EXPECT_EQ(mma_entry_tiles(80), 4);  // T = 4096
  EXPECT_EQ(kMmaBatchChunks % kMmaMaxEntryTiles, 0);  // divided by the entry tiles
  EXPECT_EQ(mma_entry_tiles(1, std::string("4")), 4);
  EXPECT_EQ(mma_entry_tiles(1000, std::string("1")), 1);
  try {
    mma_entry_tiles(1, std::string("3"));
    FAIL() << "a bad knob value was accepted";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("FP4GEMM_MOE_MMA_ENTRY_TILES must be 1, 2 or 4, not '3'"), std::string::npos)
        << error.what();
  }
}

// Two register stages by default at one entry tile only (two tiles measured slower so); the knob
// turns them off, or on for two tiles, never for four (a batch of one chunk).
TEST(CudaMoeShape, TensorCorePassesRunInTwoStagesAtOneEntryTileUnlessTheKnobSaysOtherwise) {
  EXPECT_TRUE(mma_pipelined(1));
  EXPECT_FALSE(mma_pipelined(2));
  EXPECT_FALSE(mma_pipelined(4));
  EXPECT_FALSE(mma_pipelined(1, std::string("0")));
  EXPECT_TRUE(mma_pipelined(2, std::string("1")));
  EXPECT_FALSE(mma_pipelined(4, std::string("1")));
  try {
    mma_pipelined(1, std::string("yes"));
    FAIL() << "a bad knob value was accepted";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("FP4GEMM_MOE_MMA_PIPELINE must be 0 or 1, not 'yes'"), std::string::npos) << error.what();
  }
}

TEST(CudaMoeShape, StagingTileFitsStaticSharedMemoryAndUnitsDivideTheTile) {
  EXPECT_LE(kStagedFloats * sizeof(float), std::size_t(48) << 10);  // static shared memory limit
  EXPECT_GE(kStagedFloats, kTokensPerChunk * staged_floats_per_token(32));
  EXPECT_EQ(kKTile % 32, 0);
  EXPECT_EQ(kKTile / 32, 32);  // one 32-element unit per lane per tile
  EXPECT_EQ(unit_elements_for(4096), 32);
  EXPECT_EQ(unit_elements_for(48), 16);
  EXPECT_EQ(unit_elements_for(1040), 16);
  EXPECT_EQ(kExpertThreads, 32 * kWarpsPerBlock);
  EXPECT_LE(kMaxExperts, 8 * kScanThreads);  // the scan's threads own at most eight experts each
  EXPECT_EQ((kRoutingThreads / 32) % kRouterSplits, 0);  // whole experts per router-logits block
}

TEST(CudaMoePreference, LeadsTheAmpereAndHopperRowsOnlyWhenCompiledIn) {
  for (dispatch::ArchFamily family : {dispatch::ArchFamily::sm90, dispatch::ArchFamily::sm8x}) {
    const MoePreference& preference = moe_preference_for(family);
    ASSERT_FALSE(preference.order.empty());
    EXPECT_EQ(preference.order.front(), "cuda_moe");
    // The measurement behind the order.
    EXPECT_NE(std::string(preference.evidence).find("on an H100, Qwen3.5-397B-A17B layer"), std::string::npos);
  }
  const MoePreference& host = moe_preference_for(dispatch::ArchFamily::no_gpu);
  EXPECT_EQ(std::count(host.order.begin(), host.order.end(), "cuda_moe"), 0);
  const std::vector<std::string> names = moe_backend_names();
  const bool compiled = std::find(names.begin(), names.end(), "cuda_moe") != names.end();
#ifdef FP4GEMM_WITH_CUDA
  EXPECT_TRUE(compiled);
#else
  EXPECT_FALSE(compiled);
#endif
}

// A runner on a CPU-only device never picks cuda_moe, and on a simulated Hopper with host
// operands the explain trail still ends in a backend that can run (cuda_moe's canary has no GPU).
TEST(CudaMoePreference, ACpuRunnerNeverChoosesIt) {
  MoeRunnerOptions options;
  options.device = RunnerOptions::kCpuOnly;
  options.environment = [](const std::string&) -> std::optional<std::string> { return std::nullopt; };
  const MoeRunner runner(options);
  MoeProblem p = problem(2, 2, false, false);
  p.experts = 8;
  const MoeExplanation explanation = runner.explain(p);
  EXPECT_EQ(explanation.choice, "cpu");
  for (const auto& candidate : explanation.candidates)
    if (candidate.backend == "cuda_moe") EXPECT_FALSE(candidate.ok);
}

#ifdef FP4GEMM_WITH_CUDA
// The plan names each step's kernel and why, for a simulated H100 (no GPU needed): the wide kernel
// and the router GEMM at T = 4096 (with its token block and the packed entries' share of the
// workspace), the mma kernel and the logits kernel at T = 1, never the wide kernel on Ampere.
TEST(CudaMoePlan, NamesTheWideKernelAndTheRouterGemmWhereTheyRun) {
  DeviceInfo hopper;
  hopper.kind = DeviceInfo::Kind::cuda;
  hopper.sm_major = 9;
  hopper.multiprocessors = 132;
  const CudaMoeBackend backend;
  const std::string prefill = backend.plan(problem(4096, 10, false, false), hopper);
  EXPECT_NE(prefill.find("router logits as one FP64 GEMM on cuBLAS"), std::string::npos) << prefill;
  EXPECT_NE(prefill.find("the routed experts on the wide kernel (80 expected entries per active expert >= 12 on SM 9.0)"),
            std::string::npos)
      << prefill;
  EXPECT_NE(prefill.find("token blocks of up to 128 entries of one expert (the smallest of 32, 64, 128 that holds the expected "
                         "entries; at most 832)"),
            std::string::npos)
      << prefill;
  EXPECT_NE(prefill.find("16 x 832 CTAs of wgmma.m64n128k16"), std::string::npos) << prefill;
  // 832 blocks x 64 chunks x 16 KiB
  EXPECT_NE(prefill.find("packed entries 832 MiB of the workspace"), std::string::npos) << prefill;
  // T = 2048: 40 expected entries an expert, blocks of 64 (320 + 512 blocks of 64 x 64 x 128 B).
  const std::string middle = backend.plan(problem(2048, 10, false, false), hopper);
  EXPECT_NE(middle.find("token blocks of up to 64 entries"), std::string::npos) << middle;
  EXPECT_NE(middle.find("16 x 832 CTAs of wgmma.m64n64k16"), std::string::npos) << middle;
  EXPECT_NE(middle.find("packed entries 416 MiB of the workspace"), std::string::npos) << middle;
  const std::string decode = backend.plan(problem(1, 10, false, false), hopper);
  EXPECT_NE(decode.find("router logits over E/2 x T/8 blocks"), std::string::npos) << decode;
  EXPECT_NE(decode.find("tensor-core (mma.sync BF16)"), std::string::npos) << decode;
  EXPECT_EQ(decode.find("wide kernel"), std::string::npos) << decode;
  EXPECT_NE(decode.find("K split over 2 warps a block (a short grid: at most 2 waves of such blocks on 132 SMs)"), std::string::npos)
      << decode;
  EXPECT_NE(decode.find("1 entry tile of 8 a pass (expected entries per active expert: 1; 1 tile up to 5, 2 up to 32, then 4)"),
            std::string::npos)
      << decode;
  const std::string eight = backend.plan(problem(8, 10, false, false), hopper);
  EXPECT_NE(eight.find("K split over 4 warps a block"), std::string::npos) << eight;
  // T = 384: 7 expected entries per expert (3840 over 512 slots), two tiles a pass.
  const std::string middle_mma = backend.plan(problem(384, 10, false, false), hopper);
  EXPECT_NE(middle_mma.find("2 entry tiles of 8 a pass (expected entries per active expert: 7;"), std::string::npos) << middle_mma;
  hopper.sm_major = 8;  // Ampere: never the wide kernel
  EXPECT_EQ(backend.plan(problem(4096, 10, false, false), hopper).find("wide kernel"), std::string::npos);
  // Forced where it cannot run, it runs (and is planned) as mma.
  setenv("FP4GEMM_MOE_EXPERT_KERNEL", "wide", 1);
  const std::string forced = backend.plan(problem(4096, 10, false, false), hopper);
  unsetenv("FP4GEMM_MOE_EXPERT_KERNEL");
  EXPECT_NE(forced.find("tensor-core (mma.sync BF16) NVFP4 decode, h in BF16, mma expert kernel"), std::string::npos) << forced;
}
#endif

}  // namespace
}  // namespace fp4gemm::moe::cuda_moe
