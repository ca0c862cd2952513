// `cuda_nvfp4`'s Plan (plan.hpp), what `fp4gemm explain` prints for it: it names
// the kernel and launch shape the tuning rules pick, says why, and reports a malformed knob
// instead of throwing. Host code: runs without a GPU on simulated devices.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "backends/cuda_nvfp4/kernel_switch.hpp"
#include "backends/cuda_nvfp4/mma_small_m/sm80_nvfp4_mma_tuning.hpp"
#include "backends/cuda_nvfp4/plan.hpp"
#include "backends/cuda_nvfp4/selection_rules.hpp"
#include "dispatch/device_arguments.hpp"
#include "fp4gemm/error.hpp"

namespace fp4gemm::cuda_nvfp4 {
namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(CudaNvfp4KernelPlan, NamesTheKernelAndShapeTheRulesPickOnAnH200) {
  unsetenv("FP4GEMM_DECODE_KERNEL");
  unsetenv("FP4GEMM_DECODE_SHAPE");
  unsetenv("FP4GEMM_WGMMA_SHAPE");
  unsetenv("FP4GEMM_PDL");
  const DeviceInfo h200 = dispatch::simulated_device(90, 130100);  // 132 SMs
  const std::string decode = describe_kernel_plan({1, 28672, 8192, ActivationType::bf16, DType::bf16}, h200);
  EXPECT_TRUE(contains(decode, "mma.sync kernel")) << decode;
  EXPECT_TRUE(contains(decode, "896 CTAs of 1x4 warps")) << decode;  // 1792 tiles in pairs
  EXPECT_TRUE(contains(decode, "2 weight tiles of 16 rows per warp")) << decode;
  EXPECT_TRUE(contains(decode, "; programmatic dependent launch when the grid fills 90% of the GPU's resident CTA slots")) << decode;
  const std::string narrow = describe_kernel_plan({1, 4096, 2048, ActivationType::bf16, DType::bf16}, h200);
  EXPECT_TRUE(contains(narrow, "1 weight tile of 16 rows per warp (tile pairs would leave")) << narrow;
  EXPECT_TRUE(contains(narrow, "K split 12 ways, not 8, so that 2 CTAs per SM fill the GPU")) << narrow;
  const std::string wide = describe_kernel_plan({1, 4096, 4096, ActivationType::bf16, DType::bf16}, h200);
  EXPECT_TRUE(contains(wide, "128 CTAs of 1x16 warps (32 weight rows, K split 16 ways), 2 weight tiles of 16 rows per warp "
                             "(M <= 16: too few tile pairs to fill 16 warps per SM at the usual K splits, but one CTA of 16 "
                             "warps per pair covers 84% of the SMs or more in one wave")) << wide;
  const std::string five = describe_kernel_plan({16, 12288, 4096, ActivationType::bf16, DType::bf16}, h200);
  EXPECT_TRUE(contains(five, "384 CTAs of 1x5 warps")) << five;
  EXPECT_TRUE(contains(five, "K split 5 ways, not 4, so that 3 CTAs per SM fill the GPU")) << five;
  const std::string wgmma = describe_kernel_plan({64, 28672, 8192, ActivationType::bf16, DType::bf16}, h200);
  EXPECT_TRUE(contains(wgmma, "wgmma kernel (SM 9.0 runs wgmma from M = 33")) << wgmma;
  EXPECT_TRUE(contains(wgmma, "224 CTAs of 2 warpgroups")) << wgmma;
  EXPECT_TRUE(contains(wgmma, "; programmatic dependent launch (the next kernel enters after the main loop)")) << wgmma;
  // M = 25-32: wgmma where its grid fills the SMs, and the plan gives the grid either way.
  const std::string filled = describe_kernel_plan({32, 8192, 8192, ActivationType::bf16, DType::bf16}, h200);
  EXPECT_TRUE(contains(filled, "from M = 25 when K >= 2048 and its grid puts two warpgroups per CTA on 80% of the SMs or more "
                               "or N >= 9216 and K >= 4096, and from M = 17 when N >= 28672 and K >= 2048 or N >= 18432 and K >= 3072 (here 128 CTAs of 2 "
                               "warpgroups on 132 SMs)): "
                               "activations packed for 32 tokens")) << filled;
  const std::string unfilled = describe_kernel_plan({32, 6144, 4096, ActivationType::bf16, DType::bf16}, h200);
  EXPECT_TRUE(contains(unfilled, "mma.sync kernel (not wgmma: ")) << unfilled;
  EXPECT_TRUE(contains(unfilled, "(here 96 CTAs of 2 warpgroups on 132 SMs)")) << unfilled;
  EXPECT_TRUE(contains(unfilled, "activation rows in MMA passes of 32")) << unfilled;
  const std::string mid = describe_kernel_plan({32, 12288, 4096, ActivationType::bf16, DType::bf16}, h200);
  EXPECT_TRUE(contains(mid, "wgmma kernel (SM 9.0 runs wgmma")) << mid;
  const std::string three = describe_kernel_plan({24, 8192, 8192, ActivationType::bf16, DType::bf16}, h200);
  EXPECT_TRUE(contains(three, "mma.sync kernel (not wgmma: ")) << three;
  EXPECT_TRUE(contains(three, "activation rows in MMA passes of 24")) << three;
  const std::string w4a4 = describe_kernel_plan({16, 4096, 4096, ActivationType::nvfp4, DType::bf16}, h200);
  EXPECT_EQ(w4a4.rfind("NVFP4 activations dequantized to BF16 first", 0), 0u) << w4a4;
}

// A wgmma grid that fits the SMs runs one CTA per SM (sm90_nvfp4_wgmma_tuning.hpp, wgmma_one_cta_per_sm);
// the plan says so, and only then.
TEST(CudaNvfp4KernelPlan, AWgmmaGridThatFitsTheSmsRunsOneCtaPerSm) {
  unsetenv("FP4GEMM_DECODE_KERNEL");
  unsetenv("FP4GEMM_WGMMA_SHAPE");
  const DeviceInfo h200 = dispatch::simulated_device(90, 130100);  // 132 SMs
  const std::string fits = describe_kernel_plan({64, 8192, 2048, ActivationType::bf16, DType::bf16}, h200);
  EXPECT_TRUE(contains(fits, "128 CTAs of 1 warpgroup")) << fits;
  EXPECT_TRUE(contains(fits, "; one CTA per SM (the grid fits the 132 SMs")) << fits;
  const std::string wider = describe_kernel_plan({64, 28672, 8192, ActivationType::bf16, DType::bf16}, h200);
  EXPECT_TRUE(contains(wider, "224 CTAs of 2 warpgroups")) << wider;
  EXPECT_FALSE(contains(wider, "one CTA per SM")) << wider;
  EXPECT_TRUE(cuda_nvfp4::wgmma_one_cta_per_sm(132, 132));
  EXPECT_FALSE(cuda_nvfp4::wgmma_one_cta_per_sm(133, 132));
  EXPECT_FALSE(cuda_nvfp4::wgmma_one_cta_per_sm(1, 0));  // the SM count unknown: the kernel's own occupancy
}

// A stream-K grid says how it shares the work, and runs one CTA per SM when it fits the SMs.
TEST(CudaNvfp4KernelPlan, AStreamKGridSaysHowItSharesTheWork) {
  unsetenv("FP4GEMM_DECODE_KERNEL");
  unsetenv("FP4GEMM_WGMMA_SHAPE");
  setenv("FP4GEMM_WGMMA_STREAM", "132", 1);
  const DeviceInfo h200 = dispatch::simulated_device(90, 130100);  // 132 SMs
  const std::string plan = describe_kernel_plan({64, 12288, 4096, ActivationType::bf16, DType::bf16}, h200);
  unsetenv("FP4GEMM_WGMMA_STREAM");
  EXPECT_TRUE(contains(plan, "a stream-K grid of 132 CTAs of 2 warpgroups (128 weight rows) and two producer warps sharing the "
                             "96 row blocks x 64 chunks evenly (46-47 chunks each")) << plan;
  EXPECT_TRUE(contains(plan, "[FP4GEMM_WGMMA_SHAPE / FP4GEMM_WGMMA_STREAM]; one CTA per SM")) << plan;
}

TEST(CudaNvfp4KernelPlan, SaysWhenTheGridsWavesChangedTheShape) {
  unsetenv("FP4GEMM_DECODE_SHAPE");
  unsetenv("FP4GEMM_PDL");
  const DeviceInfo h200 = dispatch::simulated_device(90, 130100);
  const auto three_per_sm = [](const LaunchShape& shape) { return 24 / (shape.warps_n * shape.warps_k); };
  const GemmProblem problem{1, 8192, 8192, ActivationType::bf16, DType::bf16};
  const std::string fitted = describe_kernel_plan(problem, h200, three_per_sm);
  EXPECT_TRUE(contains(fitted, "256 CTAs of 1x8 warps")) << fitted;
  EXPECT_TRUE(contains(fitted, "; not the size rule's 1x8, whose grid of 512 CTAs would take 1.29 waves of the GPU's resident "
                               "slots; this grid fits one, activation rows")) << fitted;
  const std::string unweighed = describe_kernel_plan(problem, h200);
  EXPECT_TRUE(contains(unweighed, "512 CTAs of 1x8 warps")) << unweighed;
  EXPECT_FALSE(contains(unweighed, "not the size rule's")) << unweighed;
}

TEST(CudaNvfp4KernelPlan, NamesTheTilePairsOfFourActivationTiles) {
  unsetenv("FP4GEMM_DECODE_SHAPE");
  unsetenv("FP4GEMM_PDL");
  const DeviceInfo h200 = dispatch::simulated_device(90, 130100);
  // The H200's four-tile occupancy: tile pairs 8 warps per SM, single tiles 12.
  const auto four_tiles = [](const LaunchShape& shape) { return (shape.tiles_per_warp == 2 ? 8 : 12) / (shape.warps_n * shape.warps_k); };
  const std::string paired = describe_kernel_plan({32, 4096, 12288, ActivationType::bf16, DType::bf16}, h200, four_tiles);
  EXPECT_TRUE(contains(paired, "128 CTAs of 1x8 warps (32 weight rows, K split 8 ways), 2 weight tiles of 16 rows per warp (tile "
                               "pairs: each activation load serves 32 weight rows, half the L1 work that binds MMA passes of 24-32 "
                               "rows; this grid fits one wave at 7.8 warps per SM, at least 7.5)")) << paired;
  // 8192x8192 at M = 32 is a wgmma problem by the kernel rules; the pairs that fit one wave run
  // instead, and the plan says so. Without the occupancy it stays wgmma.
  const GemmProblem square{32, 8192, 8192, ActivationType::bf16, DType::bf16};
  const std::string ahead = describe_kernel_plan(square, h200, four_tiles);
  EXPECT_TRUE(contains(ahead, "mma.sync kernel (tile pairs that fit one wave run ahead of wgmma where its grid splits K and each "
                              "pair warp streams at most 96 chunks (against stream-K, with 9.5 warps per SM or more); the wgmma rule "
                              "holds here: SM 9.0 runs wgmma from M = 33")) << ahead;
  EXPECT_TRUE(contains(ahead, "256 CTAs of 1x4 warps (32 weight rows, K split 4 ways), 2 weight tiles of 16 rows per warp (tile "
                              "pairs")) << ahead;
  EXPECT_TRUE(contains(describe_kernel_plan(square, h200), "wgmma kernel (SM 9.0 runs wgmma")) << describe_kernel_plan(square, h200);
}

TEST(CudaNvfp4KernelPlan, NamesTheRegisterBoundedFourTileKernelAndItsWaves) {
  unsetenv("FP4GEMM_DECODE_SHAPE");
  unsetenv("FP4GEMM_PDL");
  const DeviceInfo h200 = dispatch::simulated_device(90, 130100);
  // The H200's four-tile occupancy: 12 warps per SM unbounded, 16 bounded; tile pairs unknown
  // (never taken: NamesTheTilePairsOfFourActivationTiles).
  const auto four_tiles = [](const LaunchShape& shape) {
    return shape.tiles_per_warp == 2 ? 0 : (shape.register_bounded ? 16 : 12) / (shape.warps_n * shape.warps_k);
  };
  const std::string direct = describe_kernel_plan({32, 4096, 12288, ActivationType::bf16, DType::bf16}, h200, four_tiles);
  EXPECT_TRUE(contains(direct, "256 CTAs of 1x8 warps")) << direct;
  EXPECT_TRUE(contains(direct, "; registers bounded for 16 warps per SM (its grid keeps more than 1.1x the warps per SM")) << direct;
  EXPECT_FALSE(contains(direct, "not the size rule's")) << direct;
  // 5120 x 12288: the bounded 1x8 grid takes 1.21 waves (unbounded 2.42), its half-K 1x4 fits one.
  const std::string fitted = describe_kernel_plan({32, 5120, 12288, ActivationType::bf16, DType::bf16}, h200, four_tiles);
  EXPECT_TRUE(contains(fitted, "320 CTAs of 1x4 warps")) << fitted;
  EXPECT_TRUE(contains(fitted, "not the size rule's 1x8, whose grid of 320 CTAs would take 1.21 waves")) << fitted;
  EXPECT_TRUE(contains(fitted, "registers bounded for 16 warps per SM")) << fitted;
  // 5120 x 4096: 1x4 keeps 16 chunks a warp, so the unbounded half split comes first.
  const std::string half = describe_kernel_plan({32, 5120, 4096, ActivationType::bf16, DType::bf16}, h200, four_tiles);
  EXPECT_TRUE(contains(half, "320 CTAs of 1x4 warps")) << half;
  EXPECT_TRUE(contains(half, "not the size rule's 1x8, whose grid of 320 CTAs would take 2.42 waves of the GPU's resident "
                             "slots; this grid fits one")) << half;
  EXPECT_FALSE(contains(half, "registers bounded")) << half;
  setenv("FP4GEMM_DECODE_SHAPE", "1:8:1:1", 1);
  const std::string forced = describe_kernel_plan({32, 4096, 2048, ActivationType::bf16, DType::bf16}, h200, four_tiles);
  unsetenv("FP4GEMM_DECODE_SHAPE");
  EXPECT_TRUE(contains(forced, "[FP4GEMM_DECODE_SHAPE]; registers bounded for 16 warps per SM,")) << forced;
}

TEST(CudaNvfp4KernelPlan, OtherGpusRunTheMmaKernelWhateverTheKnob) {
  setenv("FP4GEMM_DECODE_KERNEL", "wgmma", 1);
  const std::string ampere = describe_kernel_plan({64, 28672, 8192, ActivationType::bf16, DType::bf16},
                                                  dispatch::simulated_device(80, 130100));
  EXPECT_TRUE(contains(ampere, "mma.sync kernel (the only kernel off SM 9.0")) << ampere;
  EXPECT_TRUE(contains(ampere, "; no programmatic dependent launch (SM 9.0 and newer)")) << ampere;
  const std::string forced = describe_kernel_plan({1, 4096, 4096, ActivationType::bf16, DType::bf16},
                                                  dispatch::simulated_device(90, 130100));
  EXPECT_TRUE(contains(forced, "wgmma kernel (forced by FP4GEMM_DECODE_KERNEL)")) << forced;
  unsetenv("FP4GEMM_DECODE_KERNEL");
}

// Above 64 activation rows SM 9.0 runs the prefill kernel, whatever the decode kernels' knob; it
// can be forced below, and nothing else runs it.
TEST(CudaNvfp4KernelPlan, TheSm90PrefillKernelServesMAboveSixtyFour) {
  unsetenv("FP4GEMM_DECODE_KERNEL");
  const DeviceInfo h200 = dispatch::simulated_device(90, 130100);  // 132 SMs
  EXPECT_EQ(choose_decode_kernel(kMaxActivationRows + 1, 4096, 4096, 90, 132), DecodeKernel::prefill);
  EXPECT_NE(choose_decode_kernel(kMaxActivationRows, 4096, 4096, 90, 132), DecodeKernel::prefill);
  EXPECT_EQ(choose_decode_kernel(4096, 4096, 4096, 80, 108), DecodeKernel::mma);  // the backend refuses M > 64 there
  // Below kWidePrefillMinM rows (the wide prefill kernel's rule).
  const std::string plan = describe_kernel_plan({200, 28672, 8192, ActivationType::bf16, DType::bf16}, h200);
  EXPECT_TRUE(contains(plan, "prefill kernel (M > 64")) << plan;
  EXPECT_TRUE(contains(plan, "448 tiles of 128 activation rows x 128 weight rows")) << plan;  // 2 x 224
  EXPECT_TRUE(contains(plan, "one CTA per tile (3.39 waves on 132 SMs)")) << plan;
  // 32 tiles (0.24 waves) split 4 ways: one round of 16 chunks instead of 64.
  const std::string split = describe_kernel_plan({128, 4096, 4096, ActivationType::bf16, DType::bf16}, h200);
  EXPECT_TRUE(contains(split, "; K split 4 ways, 128 CTAs (0.97 waves on 132 SMs, one CTA each, against 0.24 unsplit")) << split;
  setenv("FP4GEMM_DECODE_KERNEL", "mma", 1);
  EXPECT_EQ(choose_decode_kernel(65, 4096, 4096, 90, 132), DecodeKernel::prefill);
  setenv("FP4GEMM_DECODE_KERNEL", "prefill", 1);
  EXPECT_EQ(choose_decode_kernel(1, 4096, 4096, 90, 132), DecodeKernel::prefill);
  const std::string forced = describe_kernel_plan({1, 4096, 4096, ActivationType::bf16, DType::bf16}, h200);
  EXPECT_TRUE(contains(forced, "prefill kernel (forced by FP4GEMM_DECODE_KERNEL)")) << forced;
  EXPECT_TRUE(contains(forced, "32 tiles of 128 activation rows")) << forced;
  EXPECT_TRUE(contains(forced, "K split 4 ways")) << forced;
  setenv("FP4GEMM_DECODE_KERNEL", "prefil", 1);
  const std::string typo = describe_kernel_plan({1, 4096, 4096, ActivationType::bf16, DType::bf16}, h200);
  EXPECT_TRUE(contains(typo, "cannot plan: FP4GEMM_DECODE_KERNEL must be 'mma', 'wgmma', 'prefill' or 'wide'")) << typo;
  // A malformed knob fails the plan above 64 rows too, where only the prefill kernels run.
  const std::string large_typo = describe_kernel_plan({512, 4096, 4096, ActivationType::bf16, DType::bf16}, h200);
  EXPECT_TRUE(contains(large_typo, "cannot plan: FP4GEMM_DECODE_KERNEL must be")) << large_typo;
  unsetenv("FP4GEMM_DECODE_KERNEL");
}

// The wide prefill kernel (weights decoded in registers as wgmma's A) runs from kWidePrefillMinM
// rows where its tiles cover kWideMinSmFill of the SMs, or at any M where the knob forces it; its
// plan names its tiles, their width and waves.
TEST(CudaNvfp4KernelPlan, TheWidePrefillKernelRunsFromItsRuleOrWhenForced) {
  unsetenv("FP4GEMM_DECODE_KERNEL");
  const DeviceInfo h200 = dispatch::simulated_device(90, 130100);  // 132 SMs
  EXPECT_EQ(choose_decode_kernel(kWidePrefillMinM - 1, 28672, 8192, 90, 132), DecodeKernel::prefill);
  EXPECT_EQ(choose_decode_kernel(kWidePrefillMinM, 28672, 8192, 90, 132), DecodeKernel::wide);  // 224 tiles
  EXPECT_EQ(choose_decode_kernel(256, 12288, 4096, 90, 132), DecodeKernel::wide);                 // 96 tiles: 73 %
  EXPECT_EQ(choose_decode_kernel(256, 4096, 4096, 90, 132), DecodeKernel::prefill);               // 32 tiles
  EXPECT_EQ(choose_decode_kernel(1024, 2048, 4096, 90, 132), DecodeKernel::prefill);              // 64 tiles
  EXPECT_EQ(choose_decode_kernel(1024, 4096, 4096, 90, 132), DecodeKernel::wide);                 // 128 tiles
  EXPECT_EQ(choose_decode_kernel(1024, 4096, 4096, 90, 0), DecodeKernel::wide);                   // 132 SMs assumed
  EXPECT_EQ(choose_decode_kernel(4096, 28672, 8192, 80, 108), DecodeKernel::mma);
  EXPECT_EQ(wide_tokens(128), 128);
  EXPECT_EQ(wide_tokens(129), 256);
  EXPECT_EQ(wide_tiles(4096, 28672), 16 * 224);
  EXPECT_EQ(wide_tiles(100, 300), 3);
  const Plan small = select_plan({256, 4096, 4096, ActivationType::bf16, DType::bf16}, h200, Overrides{});
  ASSERT_EQ(small.rejected.size(), 3u);
  EXPECT_EQ(small.rejected[2].kernel, DecodeKernel::wide);
  EXPECT_EQ(small.rejected[2].reason, "its 32 tiles fill less than 70% of the SMs (it has no K split)");
  const Plan large = select_plan({4096, 28672, 8192, ActivationType::bf16, DType::bf16}, h200, Overrides{});
  EXPECT_EQ(large.kernel, DecodeKernel::wide);
  EXPECT_EQ(large.rejected[2].reason, "the wide prefill kernel's rule holds");
  EXPECT_TRUE(contains(large.to_string(), "rules: kMaxActivationRows = 64, kWidePrefillMinM = 256, kWideMinSmFill = 0.7")) << large.to_string();
  setenv("FP4GEMM_DECODE_KERNEL", "wide", 1);
  EXPECT_EQ(choose_decode_kernel(1, 4096, 4096, 90, 132), DecodeKernel::wide);
  EXPECT_EQ(choose_decode_kernel(4096, 4096, 4096, 90, 132), DecodeKernel::wide);
  const std::string plan = describe_kernel_plan({4096, 28672, 8192, ActivationType::bf16, DType::bf16}, h200);
  EXPECT_TRUE(contains(plan, "wide prefill kernel (forced by FP4GEMM_DECODE_KERNEL)")) << plan;
  EXPECT_TRUE(contains(plan, "3584 tiles of 256 activation rows x 128 weight rows, handed out 4")) << plan;
  EXPECT_TRUE(contains(plan, "wgmma.m64n256k16's A")) << plan;
  EXPECT_TRUE(contains(plan, "a persistent grid of 132 CTAs (27.15 tiles per SM on 132 SMs)")) << plan;
  // The width's wave model against the H100 runs behind kWideNarrowTileCost / kWideNarrowMinGain.
  EXPECT_EQ(wide_tokens(512, 12288, 132), 128);   // 101.9 vs 108.2 us
  EXPECT_EQ(wide_tokens(512, 28672, 132), 256);   // 450.8 vs 419.0
  EXPECT_EQ(wide_tokens(1024, 12288, 132), 256);  // 205.3 vs 176.3
  EXPECT_EQ(wide_tokens(256, 28672, 132), 256);   // 246.4 vs 211.0
  EXPECT_EQ(wide_tokens(4096, 4096, 132), 256);   // 281.9 vs 245.5
  EXPECT_EQ(wide_tokens(100, 28672, 132), 128);
  EXPECT_EQ(wide_grid_ctas(4096, 28672, 132), 132);
  EXPECT_EQ(wide_grid_ctas(256, 4096, 132), 32);  // never more CTAs than tiles
  EXPECT_EQ(wide_grid_ctas(4096, 28672, 0), 3584);
  EXPECT_EQ(wide_grid_ctas(4096, 28672, 132, 200), 200);
  setenv("FP4GEMM_WIDE_CTAS", "264", 1);
  const std::string forced = describe_kernel_plan({4096, 28672, 8192, ActivationType::bf16, DType::bf16}, h200);
  EXPECT_TRUE(contains(forced, "a persistent grid of 264 CTAs [FP4GEMM_WIDE_CTAS]")) << forced;
  setenv("FP4GEMM_WIDE_CTAS", "many", 1);
  const std::string typo = describe_kernel_plan({4096, 28672, 8192, ActivationType::bf16, DType::bf16}, h200);
  EXPECT_TRUE(contains(typo, "FP4GEMM_WIDE_CTAS must be a CTA count")) << typo;
  unsetenv("FP4GEMM_WIDE_CTAS");
  setenv("FP4GEMM_WIDE_TOKENS", "128", 1);
  const std::string narrow = describe_kernel_plan({4096, 28672, 8192, ActivationType::bf16, DType::bf16}, h200);
  EXPECT_TRUE(contains(narrow, "7168 tiles of 128 activation rows [FP4GEMM_WIDE_TOKENS] x 128 weight rows")) << narrow;
  EXPECT_TRUE(contains(narrow, "wgmma.m64n128k16's A")) << narrow;
  setenv("FP4GEMM_WIDE_TOKENS", "192", 1);
  const std::string odd = describe_kernel_plan({4096, 28672, 8192, ActivationType::bf16, DType::bf16}, h200);
  EXPECT_TRUE(contains(odd, "FP4GEMM_WIDE_TOKENS must be 128 or 256")) << odd;
  unsetenv("FP4GEMM_WIDE_TOKENS");
  EXPECT_TRUE(contains(plan, "prefill (FP4GEMM_DECODE_KERNEL=wide)")) << plan;
  unsetenv("FP4GEMM_DECODE_KERNEL");
}

// The plan names the kernels it did not take and why, and the rules table rows that decided, with
// their values; run(), kernel_name() and explain read the same plan.
TEST(CudaNvfp4KernelPlan, ThePlanNamesTheRejectedKernelsAndTheRulesThatDecided) {
  const DeviceInfo h200 = dispatch::simulated_device(90, 130100);  // 132 SMs
  const Overrides none;
  const Plan small = select_plan({1, 4096, 4096, ActivationType::bf16, DType::bf16}, h200, none);
  EXPECT_EQ(small.kernel, DecodeKernel::mma);
  ASSERT_EQ(small.rejected.size(), 3u);
  EXPECT_EQ(small.rejected[0].kernel, DecodeKernel::wgmma);
  EXPECT_EQ(small.rejected[0].reason, "below the wgmma rule");
  EXPECT_EQ(small.rejected[1].kernel, DecodeKernel::prefill);
  EXPECT_EQ(small.rejected[1].reason, "M <= 64: a small-M kernel serves it");
  EXPECT_EQ(small.rejected[2].kernel, DecodeKernel::wide);
  EXPECT_EQ(small.rejected[2].reason, "M <= 64: a small-M kernel serves it");
  EXPECT_EQ(small.pdl, ProgrammaticLaunch::when_grid_fills);
  const std::string text = small.to_string();
  EXPECT_TRUE(contains(text, "\n          not:   wgmma (below the wgmma rule); prefill (M <= 64: a small-M kernel serves it); wide prefill (M <= 64: a small-M kernel serves it)")) << text;
  EXPECT_TRUE(contains(text, "\n          rules: kMaxActivationRows = 64, kWgmmaTallMinM = 17, kProgrammaticMinSlotFraction = 0.9")) << text;

  const Plan large = select_plan({64, 28672, 8192, ActivationType::bf16, DType::bf16}, h200, none);
  EXPECT_EQ(large.kernel, DecodeKernel::wgmma);
  EXPECT_EQ(large.rejected[0].reason, "the wgmma rule holds");
  EXPECT_TRUE(contains(large.to_string(), "rules: kMaxActivationRows = 64, kWgmmaMinM = 33, kWgmmaMinN = 8192")) << large.to_string();

  const Plan prefill = select_plan({512, 4096, 4096, ActivationType::bf16, DType::bf16}, h200, none);
  EXPECT_EQ(prefill.kernel, DecodeKernel::prefill);
  EXPECT_EQ(prefill.rejected[0].reason, "M > 64 on SM 9.0: the prefill kernel serves it");
  EXPECT_EQ(prefill.rejected[1].reason, "M > 64: its widest token width is 64");
  EXPECT_TRUE(contains(prefill.to_string(), "kPrefillMaxKSplits = 8")) << prefill.to_string();

  const DeviceInfo a100 = dispatch::simulated_device(80, 130100);
  const Plan ampere = select_plan({40, 28672, 8192, ActivationType::bf16, DType::bf16}, a100, none);
  EXPECT_EQ(ampere.kernel, DecodeKernel::mma);
  EXPECT_EQ(ampere.pdl, ProgrammaticLaunch::off);
  for (const Rejection& rejected : ampere.rejected) EXPECT_EQ(rejected.reason, "sm_90a code: SM 9.0 only");

  Overrides forced;
  forced.decode_kernel = "wgmma";
  forced.pdl = "0";
  const Plan knob = select_plan({1, 4096, 4096, ActivationType::bf16, DType::bf16}, h200, forced);
  EXPECT_EQ(knob.kernel, DecodeKernel::wgmma);
  EXPECT_EQ(knob.pdl, ProgrammaticLaunch::off);
  EXPECT_EQ(knob.rejected[0].reason, "FP4GEMM_DECODE_KERNEL=wgmma");
  forced.pdl = "yes";
  EXPECT_THROW(select_plan({1, 4096, 4096, ActivationType::bf16, DType::bf16}, h200, forced), Error);
  // After a copy on the stream the kernel launches without PDL, and the shape is the one for that.
  const Plan copied = select_plan({1, 4096, 4096, ActivationType::bf16, DType::bf16}, h200, none, nullptr, true);
  EXPECT_EQ(copied.pdl, ProgrammaticLaunch::off);
  EXPECT_NE(copied.mma.warps_k, small.mma.warps_k) << "the 16-way paired split fills the GPU for PDL only";
}

TEST(CudaNvfp4KernelPlan, TheRulesTableGivesEveryRowItsValueAndMeasurement) {
  const std::string table = describe_selection_rules();
  int rows = 0;
  for (const SelectionRule& rule : kSelectionRules) {
    ++rows;
    EXPECT_FALSE(rule.decides.empty()) << rule.name;
    EXPECT_FALSE(rule.evidence.empty()) << rule.name;
    EXPECT_TRUE(contains(table, "  " + std::string(rule.name) + " = ")) << rule.name;
  }
  EXPECT_GE(rows, 30);
  EXPECT_EQ(kWgmmaMinM, 33);
  EXPECT_EQ(kMaxActivationRows, 64);
  EXPECT_DOUBLE_EQ(kProgrammaticMinSlotFraction, 0.9);
  EXPECT_EQ(kWgmmaMinElements, std::int64_t(1) << 24);
}

TEST(CudaNvfp4KernelPlan, OverridesAreTheEnvironmentsKnobs) {
  setenv("FP4GEMM_DECODE_SHAPE", "1:8", 1);
  setenv("FP4GEMM_PDL", "", 1);  // empty counts as unset
  const Overrides overrides = Overrides::from_environment();
  EXPECT_EQ(overrides.decode_shape, std::optional<std::string>("1:8"));
  EXPECT_FALSE(overrides.pdl.has_value());
  EXPECT_FALSE(overrides.decode_kernel.has_value());
  unsetenv("FP4GEMM_DECODE_SHAPE");
  unsetenv("FP4GEMM_PDL");
  EXPECT_FALSE(Overrides::from_environment().decode_shape.has_value());
}

TEST(CudaNvfp4KernelPlan, KnobsAreReportedAndMalformedOnesAreNamedNotThrown) {
  const DeviceInfo h200 = dispatch::simulated_device(90, 130100);
  const GemmProblem problem{1, 4096, 4096, ActivationType::bf16, DType::bf16};
  setenv("FP4GEMM_DECODE_SHAPE", "2:2:2", 1);
  const std::string overridden = describe_kernel_plan(problem, h200);
  EXPECT_TRUE(contains(overridden, "64 CTAs of 2x2 warps")) << overridden;  // 256 tiles, 4 per CTA
  EXPECT_TRUE(contains(overridden, "[FP4GEMM_DECODE_SHAPE]")) << overridden;
  setenv("FP4GEMM_DECODE_SHAPE", "wide", 1);
  std::string malformed;
  EXPECT_NO_THROW(malformed = describe_kernel_plan(problem, h200));
  EXPECT_EQ(malformed.rfind("cannot plan: FP4GEMM_DECODE_SHAPE", 0), 0u) << malformed;
  unsetenv("FP4GEMM_DECODE_SHAPE");
  setenv("FP4GEMM_PDL", "0", 1);
  const std::string off = describe_kernel_plan(problem, h200);
  EXPECT_TRUE(contains(off, "; no programmatic dependent launch [FP4GEMM_PDL=0]")) << off;
  EXPECT_TRUE(contains(off, "256 CTAs of 1x8 warps")) << off;  // no 12-way split to fill the GPU without PDL
  setenv("FP4GEMM_PDL", "1", 1);
  const std::string on = describe_kernel_plan(problem, h200);
  EXPECT_TRUE(contains(on, "; programmatic dependent launch [FP4GEMM_PDL=1]")) << on;
  setenv("FP4GEMM_PDL", "sometimes", 1);
  const std::string bad = describe_kernel_plan(problem, h200);
  EXPECT_EQ(bad.rfind("cannot plan: FP4GEMM_PDL must be '0' or '1'", 0), 0u) << bad;
  unsetenv("FP4GEMM_PDL");
}

}  // namespace
}  // namespace fp4gemm::cuda_nvfp4
