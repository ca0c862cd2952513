// `cuda_nvfp4`'s wide prefill kernel (SM 9.0; weights decoded in registers as wgmma's A, 128 or
// 256 activation rows as its B), forced through FP4GEMM_DECODE_KERNEL=wide, checked against the
// CPU `ref` oracle on fresh random inputs with poisoned outputs: partial activation blocks (M not
// a multiple of 128 or 256, several blocks, blocks of the raster's groups of four and a group of
// fewer), partial weight blocks (N = 7, 300), partial and multiple rounds of chunks, every
// activation and output type, strided views. Skips without an SM 9.0 GPU.
#include <gtest/gtest.h>

#include <string>

#include "gpu/cuda_nvfp4/sm90_test_fixture.hpp"
#include "gpu/gpu_test_support.hpp"

namespace fp4gemm::testing {
namespace {

class CudaNvfp4Wide : public CudaNvfp4Sm90 {};

// M = 1-128 take the 128-row CTA, above the 256-row one; 1281 rows are six 256-row blocks (one
// raster group of four and one of two). K = 16 (one partial chunk), 80, 1040, 4160 (65 chunks:
// more than the ring's stages, a partial last round), 384 and 448 (whole and partial rounds).
TEST_F(CudaNvfp4Wide, WideKernelMatchesTheReference) {
  const ScopedEnv kernel("FP4GEMM_DECODE_KERNEL", "wide");
  const std::pair<std::int64_t, std::int64_t> sizes[] = {{7, 16}, {7, 80}, {300, 1040}, {129, 4160}, {129, 384}, {300, 448}};
  for (std::int64_t m : {1, 65, 128, 129, 256, 257, 1281}) {
    for (const auto& [n, k] : sizes) {
      const std::string failures = check({m, n, k, ActivationType::bf16, DType::f32});
      ASSERT_TRUE(failures.empty()) << "wide: " << failures;
    }
  }
  // Many weight blocks (a raster group wider than one wave) and a second call on the same stream.
  for (int repeat = 0; repeat < 2; ++repeat) {
    const std::string failures = check({600, 4224, 512, ActivationType::bf16, DType::bf16});
    ASSERT_TRUE(failures.empty()) << "wide, call " << repeat << ": " << failures;
  }
}

// The persistent grid forced small (FP4GEMM_WIDE_CTAS): each CTA walks many tiles, each tile
// starting at stage 0 of the ring with the parity bits carried on; chunk counts that leave the last
// round part-used (K = 1040: 17 chunks, 4160: 65, 80: 2), and 1 CTA taking every tile of several
// activation blocks.
TEST_F(CudaNvfp4Wide, WideKernelWalksManyTilesPerCta) {
  const ScopedEnv kernel("FP4GEMM_DECODE_KERNEL", "wide");
  for (const char* ctas : {"1", "3", "7"}) {
    const ScopedEnv grid("FP4GEMM_WIDE_CTAS", ctas);
    for (const GemmCase& c : {GemmCase{600, 300, 1040, ActivationType::bf16, DType::f32}, GemmCase{257, 520, 4160, ActivationType::bf16, DType::bf16},
                              GemmCase{1281, 129, 80, ActivationType::bf16, DType::f16}}) {
      const std::string failures = check(c);
      ASSERT_TRUE(failures.empty()) << "wide, " << ctas << " CTAs: " << failures;
    }
  }
}

// The CTA width forced against the M rule (FP4GEMM_WIDE_TOKENS): 128-row tiles over M = 600 and
// 256-row tiles over M = 100 (one part-filled block), with a persistent grid smaller than the tiles.
TEST_F(CudaNvfp4Wide, WideKernelTakesEitherWidthAtAnyM) {
  const ScopedEnv kernel("FP4GEMM_DECODE_KERNEL", "wide");
  const ScopedEnv grid("FP4GEMM_WIDE_CTAS", "5");
  for (const char* tokens : {"128", "256"}) {
    const ScopedEnv width("FP4GEMM_WIDE_TOKENS", tokens);
    for (const GemmCase& c : {GemmCase{600, 300, 1040, ActivationType::bf16, DType::bf16}, GemmCase{100, 520, 272, ActivationType::bf16, DType::f32}}) {
      const std::string failures = check(c);
      ASSERT_TRUE(failures.empty()) << "wide, " << tokens << " rows: " << failures;
    }
  }
}

// Every activation and output type, and strided views: an activation whose rows are not 16-byte
// aligned (copied first) and outputs with padded rows.
TEST_F(CudaNvfp4Wide, WideKernelTakesEveryTypeAndStride) {
  const ScopedEnv kernel("FP4GEMM_DECODE_KERNEL", "wide");
  for (ActivationType activation : {ActivationType::bf16, ActivationType::nvfp4}) {
    for (DType output : {DType::f32, DType::bf16, DType::f16}) {
      const std::string failures = check({300, 129, 1024, activation, output});
      ASSERT_TRUE(failures.empty()) << "wide: " << failures;
    }
  }
  EXPECT_TRUE(check({97, 133, 1040, ActivationType::bf16, DType::bf16}, 1043, 141).empty());
  EXPECT_TRUE(check({297, 133, 1040, ActivationType::bf16, DType::f32}, 1048, 133).empty());
}

}  // namespace
}  // namespace fp4gemm::testing
