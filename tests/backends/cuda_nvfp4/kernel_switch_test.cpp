// The switch between cuda_nvfp4's kernels on the host: where the wgmma kernel (SM 9.0) runs
// instead of mma.sync, where tile pairs run ahead of it, the auto rows measured with it, and that
// every shape the rules pick is compiled.
#include <gtest/gtest.h>

#include <array>
#include <cstdlib>

#include "backends/cuda_nvfp4/kernel_switch.hpp"
#include "backends/cuda_nvfp4/mma_small_m/sm80_nvfp4_mma_tuning.hpp"
#include "backends/cuda_nvfp4/weight_layout.hpp"
#include "backends/cuda_nvfp4/wgmma_small_m/sm90_nvfp4_wgmma_tuning.hpp"
#ifdef FP4GEMM_WITH_CUDA
#include "backends/cuda_nvfp4/mma_small_m/sm80_nvfp4_mma_gemm.cuh"
#include "backends/cuda_nvfp4/wgmma_small_m/sm90_nvfp4_wgmma_gemm.cuh"
#endif
#include "dispatch/preference.hpp"
#include "fp4gemm/error.hpp"
#include "support/test_support.hpp"
#include "backends/cuda_nvfp4/h200_occupancy.hpp"

namespace fp4gemm::cuda_nvfp4 {
namespace {

constexpr int kH200Sms = 132;

// The auto rows that put cuda_nvfp4 first from M = 33 (dispatch/preference.cpp) were measured with
// its wgmma kernel: every problem they send to it must get that kernel.
TEST(CudaNvfp4KernelSwitch, TheAutoRowsThatPreferCudaNvfp4AboveMThirtyTwoGetTheWgmmaKernel) {
  unsetenv("FP4GEMM_DECODE_KERNEL");
  int preferred = 0;
  for (std::int64_t m : {33, 48, 64})
    for (std::int64_t n : {2048, 4096, 6144, 8192, 12288, 14336, 16384, 28672, 57344})
      for (std::int64_t k : {1024, 2048, 4096, 8192, 14336, 28672}) {
        if (dispatch::preference_for(dispatch::ArchFamily::sm90, m, n, k).order.front() != "cuda_nvfp4") continue;
        ++preferred;
        EXPECT_EQ(choose_decode_kernel(m, n, k, 90, kH200Sms), DecodeKernel::wgmma) << m << "x" << n << "x" << k;
      }
  EXPECT_GT(preferred, 0);
}

TEST(CudaNvfp4KernelSwitch, WgmmaKernelRunsOnSm90ForLargeWeightsFromItsMinimumM) {
  unsetenv("FP4GEMM_DECODE_KERNEL");
  const auto wgmma = [](std::int64_t m, std::int64_t n, std::int64_t k, int sm) {
    return choose_decode_kernel(m, n, k, sm, kH200Sms) == DecodeKernel::wgmma;
  };
  EXPECT_FALSE(wgmma(64, 28672, 8192, 80));
  EXPECT_FALSE(wgmma(64, 28672, 8192, 100));
  // The measured winners and losers from M = 33.
  EXPECT_TRUE(wgmma(64, 12288, 4096, 90));
  EXPECT_TRUE(wgmma(64, 4096, 12288, 90));
  EXPECT_TRUE(wgmma(33, 6144, 4096, 90));
  EXPECT_TRUE(wgmma(64, 28672, 8192, 90));
  EXPECT_TRUE(wgmma(64, 8192, 1024, 90));
  EXPECT_TRUE(wgmma(64, 4096, 4096, 90));    // wgmma by 16% at M = 64
  EXPECT_TRUE(wgmma(33, 2048, 8192, 90));
  EXPECT_FALSE(wgmma(64, 2048, 4096, 90));  // mma.sync by 13-20%
  EXPECT_FALSE(wgmma(64, 4096, 2048, 90));
  EXPECT_FALSE(wgmma(64, 2048, 2048, 90));
  // M = 25-32: where two warpgroups per CTA cover 80% of the SMs.
  EXPECT_TRUE(wgmma(32, 28672, 8192, 90));  // 224 CTAs
  EXPECT_TRUE(wgmma(25, 16384, 2048, 90));  // 128
  EXPECT_TRUE(wgmma(32, 14336, 4096, 90));  // 112
  EXPECT_TRUE(wgmma(25, 8192, 4096, 90));   // 128 (64 two-CTA clusters)
  EXPECT_TRUE(wgmma(32, 8192, 8192, 90));
  EXPECT_TRUE(wgmma(32, 8448, 8192, 90));   // 132
  EXPECT_TRUE(wgmma(32, 6912, 4096, 90));   // 108: wgmma by 13%
  EXPECT_TRUE(wgmma(32, 7168, 8192, 90));   // 112: wgmma by 22%
  EXPECT_FALSE(wgmma(32, 6144, 8192, 90));   // 96: mma.sync by 15-23%
  EXPECT_FALSE(wgmma(32, 6144, 4096, 90));   // 48: mma.sync by 31%
  EXPECT_FALSE(wgmma(32, 8192, 3584, 90));   // under 4096 columns: mma.sync by 23%
  // From 9216 rows and 4096 columns, whatever the data-parallel fill: the stream-K grid runs two CTAs per SM there (wgmma by 9-19%; 12288x4096 a tie).
  EXPECT_TRUE(wgmma(32, 9216, 4096, 90));
  EXPECT_TRUE(wgmma(25, 10240, 5120, 90));
  EXPECT_TRUE(wgmma(32, 11264, 5120, 90));
  EXPECT_TRUE(wgmma(32, 12288, 4096, 90));
  EXPECT_FALSE(wgmma(24, 10240, 5120, 90));  // three activation tiles: mma.sync by 5%
  // 96 and 80 CTAs unsplit lost by 1-11%; K split in two (kWgmmaIdleSplitMinChunks) they are 192
  // and 160 CTAs.
  EXPECT_TRUE(wgmma(32, 12288, 8192, 90));
  EXPECT_TRUE(wgmma(25, 10240, 8192, 90));
  EXPECT_FALSE(wgmma(32, 4096, 12288, 90));  // 128 CTAs of one warpgroup: mma.sync by 16%
  EXPECT_FALSE(wgmma(25, 16384, 1024, 90));  // K below 2048
  // M = 17-24: the three-tile kernel, except on tall weights .
  EXPECT_FALSE(wgmma(24, 7168, 8192, 90));   // mma.sync by 13-21%
  EXPECT_FALSE(wgmma(17, 6912, 4096, 90));   // mma.sync by 25%
  EXPECT_FALSE(wgmma(24, 8192, 28672, 90));
  EXPECT_FALSE(wgmma(24, 13312, 8192, 90));  // mma.sync by 2-14%
  EXPECT_FALSE(wgmma(17, 14336, 4096, 90));  // mma.sync by 4-15%
  EXPECT_FALSE(wgmma(17, 14336, 2048, 90));  // by 8-19%
  // Before two stream-K CTAs per SM, mma.sync won 20480x4096 M = 20 by 1-8% and 24576x8192 M = 24
  // by 6-20%; with stream-K, wgmma wins both (0.84 and 0.90).
  EXPECT_TRUE(wgmma(20, 20480, 4096, 90));
  EXPECT_TRUE(wgmma(24, 24576, 8192, 90));
  EXPECT_FALSE(wgmma(20, 20480, 2048, 90));  // 2048 K below 28672 rows: mma.sync by 1-9%
  EXPECT_TRUE(wgmma(17, 28672, 8192, 90));   // wgmma by 7%
  EXPECT_TRUE(wgmma(24, 28672, 8192, 90));   // by 19%
  EXPECT_TRUE(wgmma(17, 28672, 4096, 90));   // by 4-15%
  EXPECT_TRUE(wgmma(20, 28672, 2048, 90));   // by 4-14%
  EXPECT_FALSE(wgmma(17, 16384, 1024, 90));  // K below 2048: mma.sync by 4%
  EXPECT_FALSE(wgmma(16, 28672, 8192, 90));
  EXPECT_FALSE(wgmma(16, 8192, 8192, 90));   // mma.sync by 45% at M = 16
  // The bounds themselves.
  EXPECT_TRUE(wgmma(kWgmmaMinM, kWgmmaMinN, 16, 90));
  EXPECT_FALSE(wgmma(kWgmmaMinM - 1, kWgmmaMinN, 16, 90));
  EXPECT_TRUE(wgmma(kWgmmaMinM, 4096, kWgmmaMinElements / 4096, 90));
  EXPECT_FALSE(wgmma(kWgmmaMinM, 4096, kWgmmaMinElements / 4096 - 16, 90));
  // 8192 rows: 64 clusters of two CTAs once K holds the paired split's chunks.
  constexpr std::int64_t kPairedK = kWgmmaPairedSplitMinChunks * kChunkK;
  EXPECT_TRUE(wgmma(kWgmmaFilledMinM, 8192, kPairedK, 90));
  EXPECT_FALSE(wgmma(kWgmmaFilledMinM, 8192, kPairedK - kChunkK, 90));  // 128 CTAs of one warpgroup
  EXPECT_FALSE(wgmma(kWgmmaFilledMinM - 1, 8192, kPairedK, 90));
  EXPECT_FALSE(wgmma(kWgmmaFilledMinM, 16384, kWgmmaFilledMinK - 16, 90));
  EXPECT_TRUE(wgmma(kWgmmaFilledMinM, 16384, kWgmmaFilledMinK, 90));
  // The fill bound: 106 CTAs of 128 rows are 80.3% of 132 SMs, 105 are 79.5%.
  // (At 2048 columns: from 4096, 9216 rows and more run wgmma anyway, kWgmmaMidStreamMinN.)
  EXPECT_TRUE(wgmma(kWgmmaFilledMinM, 106 * 128, 2048, 90));
  EXPECT_FALSE(wgmma(kWgmmaFilledMinM, 105 * 128, 2048, 90));
  EXPECT_TRUE(wgmma(kWgmmaFilledMinM, kWgmmaMidStreamMinN, kWgmmaMidStreamMinK, 90));
  EXPECT_FALSE(wgmma(kWgmmaFilledMinM, kWgmmaMidStreamMinN - 128, kWgmmaMidStreamMinK, 90));
  EXPECT_FALSE(wgmma(kWgmmaFilledMinM, kWgmmaMidStreamMinN, kWgmmaMidStreamMinK - 64, 90));
  EXPECT_FALSE(wgmma(kWgmmaFilledMinM - 1, kWgmmaMidStreamMinN, kWgmmaMidStreamMinK, 90));
  EXPECT_EQ(choose_decode_kernel(kWgmmaFilledMinM, kWgmmaMidStreamMinN, kWgmmaMidStreamMinK, 90, 0), DecodeKernel::mma);
  EXPECT_TRUE(wgmma_grid_fills_sms(kWgmmaFilledMinM, 8192, 8192, kH200Sms));
  EXPECT_FALSE(wgmma_grid_fills_sms(kWgmmaFilledMinM, 8192, 8192, 0));  // SMs unknown: mma.sync
  EXPECT_EQ(choose_decode_kernel(kWgmmaFilledMinM, 8192, 8192, 90, 0), DecodeKernel::mma);
  // The tall bound (M = 17-24).
  EXPECT_TRUE(wgmma(kWgmmaTallMinM, kWgmmaTallMinN, kWgmmaTallMinK, 90));
  EXPECT_FALSE(wgmma(kWgmmaTallMinM - 1, kWgmmaTallMinN, kWgmmaTallMinK, 90));
  EXPECT_FALSE(wgmma(kWgmmaTallMinM, kWgmmaTallMinN - 1, kWgmmaTallMinK, 90));
  EXPECT_FALSE(wgmma(kWgmmaTallMinM, kWgmmaTallMinN, kWgmmaTallMinK - 16, 90));
  EXPECT_TRUE(wgmma(kWgmmaTallMinM, kWgmmaTallStreamMinN, kWgmmaTallStreamMinK, 90));  // two stream-K CTAs per SM
  EXPECT_TRUE(wgmma(kWgmmaFilledMinM - 1, kWgmmaTallStreamMinN, kWgmmaTallStreamMinK, 90));
  EXPECT_FALSE(wgmma(kWgmmaTallMinM - 1, kWgmmaTallStreamMinN, kWgmmaTallStreamMinK, 90));
  EXPECT_FALSE(wgmma(kWgmmaTallMinM, kWgmmaTallStreamMinN - 1, kWgmmaTallStreamMinK, 90));
  EXPECT_FALSE(wgmma(kWgmmaTallMinM, kWgmmaTallStreamMinN, kWgmmaTallStreamMinK - 16, 90));
  EXPECT_FALSE(wgmma(kWgmmaTallMinM, 16384, 8192, 90));  // one CTA per SM: mma.sync by 7-21%
  setenv("FP4GEMM_DECODE_KERNEL", "wgmma", 1);
  EXPECT_TRUE(wgmma(1, 16, 16, 90));
  EXPECT_FALSE(wgmma(1, 16, 16, 80));  // never on another GPU
  setenv("FP4GEMM_DECODE_KERNEL", "mma", 1);
  EXPECT_FALSE(wgmma(64, 28672, 8192, 90));
  setenv("FP4GEMM_DECODE_KERNEL", "tensor", 1);
  EXPECT_THROW(wgmma(64, 28672, 8192, 90), Error);
  unsetenv("FP4GEMM_DECODE_KERNEL");
}

// Where the kernel rules pick wgmma at M <= 32, tile pairs that fit one wave run instead where
// wgmma's grid splits K and each pair warp streams at most kPairsAheadOfWgmmaMaxChunksPerWarp
// chunks, against a stream-K grid with kMinPairsAheadOfStreamKWarpsPerSm warps per SM
//, and choose_launch_shape then takes exactly those
// pairs.
TEST(CudaNvfp4KernelSwitch, TilePairsThatFitOneWaveRunAheadOfAWgmmaGridThatSplitsK) {
  unsetenv("FP4GEMM_DECODE_KERNEL");
  unsetenv("FP4GEMM_DECODE_SHAPE");
  unsetenv("FP4GEMM_WGMMA_SHAPE");
  const ResidentCtasPerSm h200 = h200_resident_ctas_per_sm;
  const auto kernel = [&](std::int64_t m, std::int64_t n, std::int64_t k) { return choose_decode_kernel(m, n, k, 90, kH200Sms, h200); };
  for (std::int64_t m : {25, 28, 32}) {
    EXPECT_EQ(choose_decode_kernel(m, 8192, 8192, 90, kH200Sms), DecodeKernel::wgmma) << m;  // occupancy unknown
    // The winners: wgmma split 2 ways on 8192 rows (0.80-0.97), up to 96 chunks per pair warp.
    for (std::int64_t k : {4096, 8192, 14336, 20480, 24576}) EXPECT_EQ(kernel(m, 8192, k), DecodeKernel::mma) << m << " " << k;
    // The losers: 112 chunks per warp (K = 28672, 1.02 on the H100), and 16384 rows, where wgmma's 128
    // CTAs take the whole K (1.03-1.07).
    EXPECT_EQ(kernel(m, 8192, 28672), DecodeKernel::wgmma) << m;
    EXPECT_EQ(kernel(m, 16384, 4096), DecodeKernel::wgmma) << m;
    EXPECT_EQ(kernel(m, 16384, 8192), DecodeKernel::wgmma) << m;
    // No pair grid fits one wave: 12288 rows take 1.45 waves at four tiles, 28672 more.
    EXPECT_EQ(kernel(m, 12288, 4096), DecodeKernel::wgmma) << m;
    EXPECT_EQ(kernel(m, 28672, 8192), DecodeKernel::wgmma) << m;
  }
  // Three tiles against the tall band's stream-K wgmma where the pairs keep 9.5 warps per SM or
  // more: 9.7 on 20480 rows, 10.7 on 22528, 11.6 on 24576 (0.75-0.99) ...
  for (std::int64_t m : {17, 20, 24}) {
    EXPECT_EQ(kernel(m, 20480, 8192), DecodeKernel::mma) << m;
    EXPECT_EQ(kernel(m, 22528, 8192), DecodeKernel::mma) << m;
    EXPECT_EQ(kernel(m, 24576, 4096), DecodeKernel::mma) << m;
    // ... not 8.7 on 18432 rows (1.02-1.09 from K = 8192 on the H200).
    EXPECT_EQ(kernel(m, 18432, 4096), DecodeKernel::wgmma) << m;
    EXPECT_EQ(kernel(m, 18432, 8192), DecodeKernel::wgmma) << m;
  }
  // ... and up to 96 chunks per pair warp (2x2x2 splits K two ways): 24576x12288 won (0.87); at
  // 112-160 chunks 20480 rows lost 0-4% and 18432 rows 9%, so 24576x14336 (0.85) is given up too.
  EXPECT_EQ(kernel(24, 24576, 12288), DecodeKernel::mma);
  EXPECT_EQ(kernel(24, 20480, 14336), DecodeKernel::wgmma);
  EXPECT_EQ(kernel(24, 24576, 14336), DecodeKernel::wgmma);
  EXPECT_EQ(choose_decode_kernel(48, 8192, 8192, 90, kH200Sms, h200), DecodeKernel::wgmma);  // no pairs above M = 32
  EXPECT_EQ(choose_decode_kernel(32, 8192, 8192, 80, kH200Sms, h200), DecodeKernel::mma);
  // Wherever the occupancy turns wgmma into mma.sync, the launch shape is the tile pairs.
  int turned = 0;
  for (std::int64_t m = 17; m <= 32; ++m)
    for (std::int64_t n : {4096, 8192, 12288, 16384, 18432, 20480, 24576, 28672})
      for (std::int64_t k : {2048, 4096, 8192, 14336}) {
        if (choose_decode_kernel(m, n, k, 90, kH200Sms) != DecodeKernel::wgmma) continue;
        if (choose_decode_kernel(m, n, k, 90, kH200Sms, h200) != DecodeKernel::mma) continue;
        ++turned;
        EXPECT_TRUE(is_many_tile_pair(choose_launch_shape(m, n, k, kH200Sms, true, h200))) << m << "x" << n << "x" << k;
      }
  EXPECT_GT(turned, 0);
  setenv("FP4GEMM_DECODE_KERNEL", "wgmma", 1);
  EXPECT_EQ(choose_decode_kernel(32, 8192, 8192, 90, kH200Sms, h200), DecodeKernel::wgmma);  // the knob still rules
  unsetenv("FP4GEMM_DECODE_KERNEL");
}

#ifdef FP4GEMM_WITH_CUDA
// Every shape the rules can pick (mma.sync and wgmma) is one this build compiles, on GPUs of other
// SM counts too.
TEST(CudaNvfp4KernelSwitch, EveryChosenShapeIsCompiled) {
  unsetenv("FP4GEMM_DECODE_SHAPE");
  unsetenv("FP4GEMM_WGMMA_SHAPE");
  for (int multiprocessors : {16, 78, 108, 132, 170}) {
    for (std::int64_t m = 1; m <= kMaxActivationRows; ++m) {
      for (std::int64_t n : {1, 16, 300, 4096, 12288, 28672, 65536, 151936}) {
        for (std::int64_t k : {16, 1040, 4096, 8192, 12288, 29568}) {
          for (bool programmatic : {true, false}) {
            // The size rule's shape, and the one-wave alternatives at the H200's occupancy; like
            // decode_gemm_resident_ctas_per_sm, the occupancy of a shape not compiled is 0.
            const ResidentCtasPerSm h200 = [](const LaunchShape& shape) {
              return is_compiled_shape(shape) ? h200_resident_ctas_per_sm(shape) : 0;
            };
            for (const ResidentCtasPerSm& occupancy : {ResidentCtasPerSm(), h200}) {
              const LaunchShape shape = choose_launch_shape(m, n, k, multiprocessors, programmatic, occupancy);
              EXPECT_TRUE(is_compiled_shape(shape)) << m << "x" << n << "x" << k << " on " << multiprocessors << " SMs: "
                                                    << shape.m_tiles << " tiles, " << shape.warps_n << ":" << shape.warps_k << ":"
                                                    << shape.tiles_per_warp << ":" << int(shape.register_bounded);
            }
          }
          const WgmmaShape wgmma = choose_wgmma_shape(m, n, k, multiprocessors);
          EXPECT_TRUE(is_compiled_wgmma_shape(wgmma)) << m << "x" << n << "x" << k << " on " << multiprocessors << " SMs: "
                                                      << wgmma.tokens << " tokens, " << wgmma.warpgroups << ":" << wgmma.splits
                                                      << ":" << wgmma.multicast;
        }
      }
    }
  }
}

#endif
}  // namespace
}  // namespace fp4gemm::cuda_nvfp4
