// The prefill kernel's K split on the host (sm90_nvfp4_prefill_tuning.hpp).
#include <gtest/gtest.h>

#include <cstdlib>

#include "backends/cuda_nvfp4/wgmma_prefill/sm90_nvfp4_prefill_tuning.hpp"
#include "fp4gemm/error.hpp"

namespace fp4gemm::cuda_nvfp4 {
namespace {

// The prefill kernel's K split where its tiles leave SMs idle, not where a split adds rounds of
// CTAs (H200 times per call); at least 8 chunks per CTA; the knob overrides within 1-8 and the chunks.
TEST(CudaNvfp4PrefillTuning, SplitsKWhereItsTilesLeaveSmsIdle) {
  unsetenv("FP4GEMM_PREFILL_SPLITS");
  EXPECT_EQ(prefill_k_splits(65, 4096, 64, 132), 4);      // 32 tiles: 4 ways measured fastest (33.3 -> 18.8 us)
  EXPECT_EQ(prefill_k_splits(128, 4096, 192, 132), 4);    // 4096x12288: 90.2 -> 33.7
  EXPECT_EQ(prefill_k_splits(256, 4096, 64, 132), 2);     // 64 tiles: 2 ways (4 ways is two rounds)
  EXPECT_EQ(prefill_k_splits(65, 12288, 64, 132), 1);     // 96 tiles: 4 ways would be 3 rounds (44.4 against 34.3)
  EXPECT_EQ(prefill_k_splits(256, 12288, 64, 132), 1);    // 192 tiles: 2 ways level (66.4 against 65.9)
  EXPECT_EQ(prefill_k_splits(128, 28672, 128, 132), 1);   // 224 tiles: every split slower
  EXPECT_EQ(prefill_k_splits(512, 4096, 64, 132), 1);     // 128 tiles, 0.97 waves
  EXPECT_EQ(prefill_k_splits(128, 4096, 15, 132), 1);     // fewer than 16 chunks: no split keeps 8 per CTA
  EXPECT_EQ(prefill_k_splits(128, 4096, 16, 132), 2);
  EXPECT_EQ(prefill_k_splits(128, 4096, 64, 0), 1);       // SMs unknown
  setenv("FP4GEMM_PREFILL_SPLITS", "3", 1);
  bool forced = false;
  EXPECT_EQ(prefill_k_splits(4096, 28672, 128, 132, &forced), 3);
  EXPECT_TRUE(forced);
  EXPECT_EQ(prefill_k_splits(128, 4096, 2, 132), 2);  // clamped to the chunks
  setenv("FP4GEMM_PREFILL_SPLITS", "9", 1);
  EXPECT_THROW(prefill_k_splits(128, 4096, 64, 132), Error);
  unsetenv("FP4GEMM_PREFILL_SPLITS");
}

}  // namespace
}  // namespace fp4gemm::cuda_nvfp4
