// `cuda_nvfp4`'s wgmma kernels (SM 9.0) at every compiled CTA shape and several K splits, forced
// through FP4GEMM_DECODE_KERNEL / FP4GEMM_WGMMA_SHAPE and checked against the CPU `ref` oracle on
// fresh random inputs: partial row blocks (N not a multiple of the CTA's rows, and N below one
// warp's 16 rows), partial 64-chunks, splits that do not divide the chunk count and splits with no
// chunk at all, every token width (M = 1 … 64, padded to 16, 32 or 64). Skips without an SM 9.0 GPU.
#include <gtest/gtest.h>

#include <array>
#include <memory>
#include <string>

#include "backends/cuda_nvfp4/mma_small_m/sm80_nvfp4_mma_tuning.hpp"
#include "backends/cuda_nvfp4/wgmma_small_m/sm90_nvfp4_wgmma_gemm.cuh"
#include "fp4gemm/registry.hpp"
#include "gpu/cuda_nvfp4/sm90_test_fixture.hpp"
#include "gpu/gpu_test_support.hpp"

namespace fp4gemm::testing {
namespace {

class CudaNvfp4Wgmma : public CudaNvfp4Sm90 {};

TEST_F(CudaNvfp4Wgmma, EveryCompiledShapeAndSplitMatchesTheReference) {
  const ScopedEnv kernel("FP4GEMM_DECODE_KERNEL", "wgmma");
  int shapes_run = 0;
  // (warpgroups, splits, multicast); shapes this build does not run (3 splits, 4 warpgroups) are skipped.
  const std::array<int, 3> shapes[] = {{1, 1, 1}, {1, 4, 1}, {1, 8, 1}, {2, 1, 1}, {2, 2, 1}, {2, 8, 1}, {2, 1, 4},
                                       {2, 2, 4}, {1, 1, 2}, {2, 4, 2}, {2, 1, 8}, {1, 3, 1}, {4, 1, 1}};
  // N = 7: one partial warp tile (and multicast groups of CTAs past N); 300: partial CTAs; 1100:
  // several multicast groups. K = 16, 80: fewer chunks than splits; 1040: a partial chunk;
  // 4160 = 65 chunks, which no split divides.
  const std::pair<std::int64_t, std::int64_t> sizes[] = {{7, 16}, {7, 80}, {300, 1040}, {300, 4160}, {1100, 1040}};
  for (const auto& [warpgroups, splits, multicast] : shapes) {
    for (std::int64_t m : {1, 9, 16, 17, 33, 64}) {
      const cuda_nvfp4::WgmmaShape shape{m <= 16 ? 16 : m <= 32 ? 32 : 64, warpgroups, splits, multicast};
      if (!cuda_nvfp4::is_compiled_wgmma_shape(shape)) continue;
      const std::string name = std::to_string(warpgroups) + ":" + std::to_string(splits) + ":" + std::to_string(multicast);
      const ScopedEnv forced("FP4GEMM_WGMMA_SHAPE", name);
      for (const auto& [n, k] : sizes) {
        const std::string failures = check({m, n, k, ActivationType::bf16, DType::f32});
        ASSERT_TRUE(failures.empty()) << "wgmma " << name << " " << failures;
      }
      ++shapes_run;
    }
  }
  EXPECT_GE(shapes_run, 50) << "fewer compiled shapes than expected";
}

TEST_F(CudaNvfp4Wgmma, EveryActivationAndOutputType) {
  for (const char* forced : {"wgmma"}) {
    const ScopedEnv kernel("FP4GEMM_DECODE_KERNEL", forced);
    for (ActivationType activation : {ActivationType::bf16, ActivationType::nvfp4}) {
      for (DType output : {DType::f32, DType::bf16, DType::f16}) {
        for (std::int64_t m : {17, 40, 64}) {
          const std::string failures = check({m, 129, 4096, activation, output});
          ASSERT_TRUE(failures.empty()) << forced << ": " << failures;
        }
      }
    }
  }
}

// Each epilogue with every output type and a padded output row stride: CTAs alone in their
// cluster store straight from their accumulators (1:1, 2:1), K-split clusters sum their members'
// partials and each stores every splits-th accumulator quad (1:2, 2:4), multicast groups store
// their own rows (2:1:2). M = 9 and 40 leave tokens unstored in a quad; N = 300 leaves rows.
TEST_F(CudaNvfp4Wgmma, EveryOutputTypeThroughEachEpilogue) {
  const ScopedEnv kernel("FP4GEMM_DECODE_KERNEL", "wgmma");
  for (const char* shape : {"1:1", "2:1", "1:2", "2:4", "2:1:2"}) {
    const ScopedEnv forced("FP4GEMM_WGMMA_SHAPE", shape);
    for (DType output : {DType::f32, DType::bf16, DType::f16}) {
      for (std::int64_t m : {9, 40, 64}) {
        const GemmCase c{m, 300, 1040, ActivationType::bf16, output};
        const std::string failures = check(c, 0, c.n + 5);
        ASSERT_TRUE(failures.empty()) << "wgmma " << shape << ": " << failures;
      }
    }
  }
}

// The stream-K grid (FP4GEMM_WGMMA_STREAM) at CTA counts that put several row blocks in one CTA
// (1, 3), split row blocks between CTAs at uneven points (7, 132; 264, two per SM where they fit)
// and leave CTAs inside one row block, each a contributor (N = 300 and K = 4160 over 132 CTAs: 3 row
// blocks of 65 chunks), or a single chunk each (more CTAs asked for than (row block, chunk) pairs:
// clamped); every output type through its epilogue and a padded output row stride; with the rule's
// shape given way (1:2) and with one asked for (2:1).
TEST_F(CudaNvfp4Wgmma, StreamKGridMatchesTheReference) {
  const ScopedEnv kernel("FP4GEMM_DECODE_KERNEL", "wgmma");
  const std::pair<std::int64_t, std::int64_t> sizes[] = {{7, 16}, {300, 1040}, {300, 4160}, {1100, 1040}};
  int cases_run = 0;
  for (const char* asked : {"", "2:1"}) {
    std::unique_ptr<ScopedEnv> shape;
    if (*asked != '\0') shape = std::make_unique<ScopedEnv>("FP4GEMM_WGMMA_SHAPE", asked);
    for (const char* ctas : {"1", "3", "7", "132", "264", "5000"}) {
      const ScopedEnv streamed("FP4GEMM_WGMMA_STREAM", ctas);
      for (std::int64_t m : {9, 17, 33, 64}) {
        for (const auto& [n, k] : sizes) {
          const DType output = cases_run % 3 == 0 ? DType::f32 : cases_run % 3 == 1 ? DType::bf16 : DType::f16;
          const GemmCase c{m, n, k, ActivationType::bf16, output};
          const std::string failures = check(c, 0, cases_run % 2 == 0 ? 0 : c.n + 5);
          ASSERT_TRUE(failures.empty()) << "wgmma " << asked << ", stream-K over " << ctas << " CTAs: " << failures;
          ++cases_run;
        }
      }
    }
  }
  EXPECT_EQ(cases_run, 2 * 6 * 4 * 4);
}

// The stream-K grid has stream_k_ctas_per_sm CTAs per SM (choose_wgmma_shape), so each of its
// kernels must fit that many per SM, and no more for the 64-token one whose CTAs would then be
// scheduled unevenly: this guards the register bounds of the build (sm90_nvfp4_wgmma_tuning.hpp).
TEST_F(CudaNvfp4Wgmma, StreamKKernelsFitTheirCtasPerSm) {
  for (int tokens : {16, 32, 64}) {
    EXPECT_EQ(cuda_nvfp4::wgmma_stream_k_resident_ctas_per_sm(tokens), cuda_nvfp4::stream_k_ctas_per_sm(tokens)) << tokens << " tokens";
  }
}

// A stream-K grid of a clustered shape, or of 64-row CTAs (not compiled), is refused before any launch.
TEST_F(CudaNvfp4Wgmma, StreamKWithAShapeItDoesNotRunIsAClearError) {
  const ScopedEnv kernel("FP4GEMM_DECODE_KERNEL", "wgmma");
  const ScopedEnv streamed("FP4GEMM_WGMMA_STREAM", "132");
  for (const char* asked : {"2:2", "1:1"}) {
    const ScopedEnv shape("FP4GEMM_WGMMA_SHAPE", asked);
    const RefusedRun run = run_expecting_refusal(*backend_, gpu_, {40, 300, 1040, ActivationType::bf16, DType::f32}, *stream_);
    EXPECT_TRUE(run.threw) << asked;
    EXPECT_TRUE(run.output_untouched) << asked;
  }
}

// Activations whose rows are not 16-byte aligned (staged by a copy, then packed): a row stride of
// K + 3 elements with NaN between rows, and an output row stride of N + 5.
TEST_F(CudaNvfp4Wgmma, OddActivationAndOutputRowStrides) {
  for (const char* forced : {"wgmma"}) {
    const ScopedEnv kernel("FP4GEMM_DECODE_KERNEL", forced);
    for (std::int64_t m : {3, 33, 64}) {
      const GemmCase c{m, 300, 1040, ActivationType::bf16, DType::bf16};
      const std::string failures = check(c, c.k + 3, c.n + 5);
      ASSERT_TRUE(failures.empty()) << forced << ": " << failures;
    }
  }
}

TEST_F(CudaNvfp4Wgmma, AShapeThisBuildDoesNotCompileIsAClearError) {
  const ScopedEnv kernel("FP4GEMM_DECODE_KERNEL", "wgmma");  // N = 64 alone would pick mma.sync
  const ScopedEnv forced("FP4GEMM_WGMMA_SHAPE", "3:2");
  const RefusedRun run = run_expecting_refusal(*backend_, gpu_, {40, 64, 64, ActivationType::bf16, DType::f32}, *stream_);
  EXPECT_TRUE(run.threw);
  EXPECT_TRUE(run.output_untouched);
}

}  // namespace
}  // namespace fp4gemm::testing
