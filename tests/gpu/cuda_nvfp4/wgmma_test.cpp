// `cuda_nvfp4`'s wgmma kernels (SM 9.0) at every compiled CTA shape and several K splits, forced
// through FP4GEMM_DECODE_KERNEL / FP4GEMM_WGMMA_SHAPE and checked against the CPU `ref` oracle on
// fresh random inputs: partial row blocks (N not a multiple of the CTA's rows, and N below one
// warp's 16 rows), partial 64-chunks, splits that do not divide the chunk count and splits with no
// chunk at all, every token width (M = 1 … 64, padded to 16, 32 or 64); and the prefill kernel (M > 64). Skips
// without an SM 9.0 GPU.
#include <gtest/gtest.h>

#include <array>
#include <memory>
#include <string>

#include "backends/cuda_nvfp4/mma_small_m/sm80_nvfp4_mma_tuning.hpp"
#include "backends/cuda_nvfp4/wgmma_small_m/sm90_nvfp4_wgmma_gemm.cuh"
#include "fp4gemm/registry.hpp"
#include "gpu/gpu_test_support.hpp"

namespace fp4gemm::testing {
namespace {

constexpr double kRelativeTolerance = 1e-4;  // as in cuda_backend_correctness_test.cpp

// Every test needs an SM 9.0 GPU (the kernel is sm_90a only), the backend and a stream.
class CudaNvfp4Wgmma : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto gpu = first_gpu();
    if (!gpu) GTEST_SKIP() << "needs an SM 9.0 GPU: " << cuda_unavailable_reason();
    if (gpu->sm() != 90) GTEST_SKIP() << "needs an SM 9.0 GPU, not " << gpu->to_string();
    gpu_ = *gpu;
    backend_ = make_backend("cuda_nvfp4");
    stream_ = std::make_unique<TestStream>();
  }

  // One case on fresh random operands; activation and output rows `*_stride` elements apart (0:
  // packed). Returns the failures, empty when every element matches and nothing else was written.
  std::string check(const GemmCase& c, std::int64_t activation_stride = 0, std::int64_t output_stride = 0) {
    const std::uint64_t seed = fresh_seed();
    std::mt19937_64 rng(seed);
    const GemmOperands operands = make_operands(c, rng);
    const auto prepared = backend_->prepare(operands.weight.view(), gpu_);
    const DeviceActivation activation = upload_activation(operands, gpu_.index, activation_stride);
    DeviceOutput out(c.m, c.n, c.output, gpu_.index, output_stride);
    backend_->run(activation.view, *prepared, operands.alpha, out.view(), {stream_->get()});
    stream_->synchronize();
    out.download();
    std::string failures = compare_with_reference(operands, out.values(), c.m, c.n, c.output, kRelativeTolerance);
    if (!out.only_elements_written()) failures += "wrote outside the output\n";
    return failures.empty() ? "" : c.to_string() + " seed " + std::to_string(seed) + "\n" + failures;
  }

  DeviceInfo gpu_;
  std::unique_ptr<Backend> backend_;
  std::unique_ptr<TestStream> stream_;
};

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

// The prefill kernel (M > 64, or forced by FP4GEMM_DECODE_KERNEL=prefill): partial token blocks
// (M not a multiple of its 128 rows, and M below one warp's 16 rows), partial row blocks (N = 7, 300),
// K = 16 (one partial chunk), 80, 1040 (a partial chunk), 4160 (65 chunks: more than both rings
// hold), and 384 and 448 (6 and 7 chunks): after the consumers' 4-chunk loop, tails of 1, 2 and 3.
TEST_F(CudaNvfp4Wgmma, PrefillKernelMatchesTheReference) {
  const std::pair<std::int64_t, std::int64_t> sizes[] = {{7, 16}, {7, 80}, {300, 1040}, {129, 4160}, {129, 384}, {7, 448}};
  for (std::int64_t m : {65, 128, 200, 257}) {
    for (const auto& [n, k] : sizes) {
      const std::string failures = check({m, n, k, ActivationType::bf16, DType::f32});
      ASSERT_TRUE(failures.empty()) << "prefill: " << failures;
    }
  }
  const ScopedEnv kernel("FP4GEMM_DECODE_KERNEL", "prefill");
  for (std::int64_t m : {1, 9, 64}) {
    const std::string failures = check({m, 300, 1040, ActivationType::bf16, DType::f32});
    ASSERT_TRUE(failures.empty()) << "prefill forced: " << failures;
  }
}

// The prefill kernel's K split forced 1-8 ways (FP4GEMM_PREFILL_SPLITS): chunks that do not divide
// evenly (65 and 7 chunks), a split of one chunk per CTA (K = 80, 2 chunks: 3 clamped to 2),
// several tiles each counted and summed (M = 257, N = 300: 9 tiles), and a second call on the
// same stream (the counters start from zero again). The rule itself splits the shapes of
// PrefillKernelMatchesTheReference on the H200 (e.g. 9 tiles x 65 chunks: 8 ways).
TEST_F(CudaNvfp4Wgmma, PrefillKernelSplitsKAnyWay) {
  for (const char* splits : {"1", "2", "3", "5", "8"}) {
    const ScopedEnv forced("FP4GEMM_PREFILL_SPLITS", splits);
    for (const GemmCase& c : {GemmCase{257, 300, 4160, ActivationType::bf16, DType::f32}, GemmCase{65, 7, 448, ActivationType::bf16, DType::bf16},
                              GemmCase{128, 129, 80, ActivationType::nvfp4, DType::f16}}) {
      for (int repeat = 0; repeat < 2; ++repeat) {
        const std::string failures = check(c);
        ASSERT_TRUE(failures.empty()) << "split " << splits << ", call " << repeat << ": " << failures;
      }
    }
  }
}

// Every activation and output type through the prefill kernel, and strided views: an activation
// whose rows are not 16-byte aligned (copied first) and outputs with padded rows, 16-byte aligned
// (the epilogue's 16-byte stores, with a partial piece at N = 133) or not (element by element).
TEST_F(CudaNvfp4Wgmma, PrefillKernelTakesEveryTypeAndStride) {
  for (ActivationType activation : {ActivationType::bf16, ActivationType::nvfp4}) {
    for (DType output : {DType::f32, DType::bf16, DType::f16}) {
      const std::string failures = check({130, 129, 4096, activation, output});
      ASSERT_TRUE(failures.empty()) << "prefill: " << failures;
    }
  }
  EXPECT_TRUE(check({97, 133, 1040, ActivationType::bf16, DType::bf16}, 1043, 141).empty());
  EXPECT_TRUE(check({97, 133, 1040, ActivationType::bf16, DType::bf16}, 1043, 136).empty());
  EXPECT_TRUE(check({97, 133, 1040, ActivationType::bf16, DType::f32}, 1048, 133).empty());
}

}  // namespace
}  // namespace fp4gemm::testing
