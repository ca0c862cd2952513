// `cuda_nvfp4`'s prefill kernel (SM 9.0, M > 64), forced through FP4GEMM_DECODE_KERNEL=prefill
// where M is smaller, checked against the CPU `ref` oracle on fresh random inputs: partial token and
// row blocks, partial chunks, K splits, every activation and output type and strided views. Skips
// without an SM 9.0 GPU.
#include <gtest/gtest.h>

#include <string>

#include "gpu/cuda_nvfp4/sm90_test_fixture.hpp"
#include "gpu/gpu_test_support.hpp"

namespace fp4gemm::testing {
namespace {

class CudaNvfp4Prefill : public CudaNvfp4Sm90 {};

// The prefill kernel (M > 64, or forced by FP4GEMM_DECODE_KERNEL=prefill): partial token blocks
// (M not a multiple of its 128 rows, and M below one warp's 16 rows), partial row blocks (N = 7, 300),
// K = 16 (one partial chunk), 80, 1040 (a partial chunk), 4160 (65 chunks: more than both rings
// hold), and 384 and 448 (6 and 7 chunks): after the consumers' 4-chunk loop, tails of 1, 2 and 3.
TEST_F(CudaNvfp4Prefill, PrefillKernelMatchesTheReference) {
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
TEST_F(CudaNvfp4Prefill, PrefillKernelSplitsKAnyWay) {
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
TEST_F(CudaNvfp4Prefill, PrefillKernelTakesEveryTypeAndStride) {
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
