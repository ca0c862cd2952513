// The wgmma kernel's grids on the host: token widths, K splits in clusters, the stream-K grid and
// its partition, and the splits that are compiled.
#include <gtest/gtest.h>

#include <array>
#include <cstdlib>

#include "backends/cuda_nvfp4/mma_small_m/sm80_nvfp4_mma_tuning.hpp"
#include "backends/cuda_nvfp4/weight_layout.hpp"
#include "backends/cuda_nvfp4/wgmma_small_m/sm90_nvfp4_wgmma_tuning.hpp"
#ifdef FP4GEMM_WITH_CUDA
#include "backends/cuda_nvfp4/mma_small_m/sm80_nvfp4_mma_gemm.cuh"
#include "backends/cuda_nvfp4/wgmma_small_m/sm90_nvfp4_wgmma_gemm.cuh"
#endif
#include "fp4gemm/error.hpp"
#include "support/test_support.hpp"

namespace fp4gemm::cuda_nvfp4 {
namespace {

TEST(CudaNvfp4WgmmaTuning, WgmmaShapesCoverTheirTokensAndSplitKWithinACluster) {
  for (std::int64_t m = 1; m <= kMaxActivationRows; ++m) {
    for (std::int64_t n : {16, 4096, 8192, 28672}) {  // 8192 x 12288: the paired split
      for (std::int64_t k : {16, 4096, 12288}) {
        const WgmmaShape shape = choose_wgmma_shape(m, n, k, 132);
        EXPECT_GE(shape.tokens, m);
        EXPECT_TRUE(shape.tokens == 16 || shape.tokens == 32 || shape.tokens == 64);
        EXPECT_GE(shape.splits, 1);
        EXPECT_GE(shape.multicast, 1);
        EXPECT_LE(shape.splits * shape.multicast, kMaxWgmmaCluster);
        const std::int64_t chunks = (k + kChunkK - 1) / kChunkK;
        if (shape.splits > 1) EXPECT_GE(chunks / shape.splits, kMinWgmmaChunksPerSplit);
      }
    }
  }
  // The data-parallel grid's measured winners at M = 64 on 132 SMs.
  const auto shape_of = [](std::int64_t n, std::int64_t k) {
    const WgmmaShape chosen = choose_data_parallel_wgmma_shape(64, n, k, 132);
    return std::array<int, 3>{chosen.warpgroups, chosen.splits, chosen.multicast};
  };
  EXPECT_EQ(shape_of(4096, 4096), (std::array<int, 3>{1, 2, 1}));
  EXPECT_EQ(shape_of(12288, 4096), (std::array<int, 3>{2, 1, 1}));
  EXPECT_EQ(shape_of(8448, 2048), (std::array<int, 3>{1, 1, 1}));  // 132 64-row CTAs: one per SM
  EXPECT_EQ(shape_of(8448, 4096), (std::array<int, 3>{2, 2, 1}));  // the paired split: 66 clusters of two
  EXPECT_EQ(shape_of(8512, 4096), (std::array<int, 3>{2, 1, 1}));
  EXPECT_EQ(shape_of(4096, 12288), (std::array<int, 3>{1, 2, 1}));
  EXPECT_EQ(shape_of(28672, 8192), (std::array<int, 3>{2, 1, 1}));
  // Unsplit 64-row CTAs of a long K become 128-row ones split in two.
  EXPECT_EQ(shape_of(8192, 8192), (std::array<int, 3>{2, 2, 1}));
  EXPECT_EQ(shape_of(6144, 28672), (std::array<int, 3>{2, 2, 1}));
  EXPECT_EQ(shape_of(8192, 4096), (std::array<int, 3>{2, 2, 1}));
  EXPECT_EQ(shape_of(8192, 4096 - 64), (std::array<int, 3>{1, 1, 1}));  // 63 chunks
  EXPECT_EQ(shape_of(8448, 8192), (std::array<int, 3>{2, 2, 1}));  // 66 clusters of two: every SM
  // Unsplit 128-row CTAs that leave a fifth of the SMs idle split a long K in two.
  EXPECT_EQ(shape_of(10240, 8192), (std::array<int, 3>{2, 2, 1}));   // 80 CTAs
  EXPECT_EQ(shape_of(12288, 8192), (std::array<int, 3>{2, 2, 1}));   // 96
  EXPECT_EQ(shape_of(12288, 8192 - 64), (std::array<int, 3>{2, 1, 1}));  // 127 chunks
  EXPECT_EQ(shape_of(14336, 8192), (std::array<int, 3>{2, 2, 1}));   // 112 CTAs
  EXPECT_EQ(shape_of(15104, 8192), (std::array<int, 3>{2, 2, 1}));   // 118: 89.4% of the SMs
  EXPECT_EQ(shape_of(15232, 8192), (std::array<int, 3>{2, 1, 1}));   // 119: 90.2%
  EXPECT_EQ(shape_of(28672, 8192), (std::array<int, 3>{2, 1, 1}));
  // 127 SMs: 127 64-row CTAs fit, but 128 paired ones (64 row blocks x 2) would not.
  const WgmmaShape odd = choose_data_parallel_wgmma_shape(64, 8128, 4096, 127);
  EXPECT_EQ((std::array<int, 3>{odd.warpgroups, odd.splits, odd.multicast}), (std::array<int, 3>{1, 1, 1}));
  setenv("FP4GEMM_WGMMA_SHAPE", "2:9", 1);  // more splits than a portable cluster
  WgmmaShape shape{64, 2, 1};
  EXPECT_THROW(wgmma_shape_override(shape), Error);
  setenv("FP4GEMM_WGMMA_SHAPE", "2:4:4", 1);  // a cluster of 16
  EXPECT_THROW(wgmma_shape_override(shape), Error);
  setenv("FP4GEMM_WGMMA_SHAPE", "1:3", 1);  // the epilogue needs splits that are powers of two
  EXPECT_THROW(wgmma_shape_override(shape), Error);
  setenv("FP4GEMM_WGMMA_SHAPE", "2:1:3", 1);  // and so does the activation chunk's multicast
  EXPECT_THROW(wgmma_shape_override(shape), Error);
  setenv("FP4GEMM_WGMMA_SHAPE", "1:4", 1);
  EXPECT_TRUE(wgmma_shape_override(shape));
  EXPECT_EQ(shape.warpgroups, 1);
  EXPECT_EQ(shape.splits, 4);
  EXPECT_EQ(shape.multicast, 1);
  setenv("FP4GEMM_WGMMA_SHAPE", "2:2:4", 1);
  EXPECT_TRUE(wgmma_shape_override(shape));
  EXPECT_EQ(shape.multicast, 4);
  setenv("FP4GEMM_WGMMA_STREAM", "132", 1);  // a stream-K grid is never clustered
  EXPECT_THROW(wgmma_shape_override(shape), Error);
  setenv("FP4GEMM_WGMMA_SHAPE", "1:1", 1);
  EXPECT_TRUE(wgmma_shape_override(shape));
  EXPECT_EQ((std::array<int, 4>{shape.warpgroups, shape.splits, shape.multicast, shape.stream_ctas}), (std::array<int, 4>{1, 1, 1, 132}));
  unsetenv("FP4GEMM_WGMMA_SHAPE");
  shape = WgmmaShape{64, 1, 2};  // the rule's CTAs and K split give way to the stream-K grid's
  EXPECT_TRUE(wgmma_shape_override(shape));
  EXPECT_EQ((std::array<int, 4>{shape.warpgroups, shape.splits, shape.multicast, shape.stream_ctas}),
            (std::array<int, 4>{kStreamKWarpgroups, 1, 1, 132}));
  for (const char* bad : {"-1", "many", "70000"}) {
    setenv("FP4GEMM_WGMMA_STREAM", bad, 1);
    EXPECT_THROW(wgmma_shape_override(shape), Error) << bad;
  }
  setenv("FP4GEMM_WGMMA_STREAM", "0", 1);  // off: the rule's grid
  EXPECT_TRUE(wgmma_shape_override(shape));
  EXPECT_EQ(shape.stream_ctas, 0);
  // The shape that runs: with FP4GEMM_WGMMA_STREAM=0 alone, the rule's data-parallel grid (4096x12288:
  // 64-row CTAs, K split in two), not the stream-K grid's CTAs unstreamed.
  bool overridden = false;
  const WgmmaShape data_parallel = wgmma_shape_to_run(64, 4096, 12288, 132, overridden);
  EXPECT_TRUE(overridden);
  EXPECT_EQ((std::array<int, 4>{data_parallel.warpgroups, data_parallel.splits, data_parallel.multicast, data_parallel.stream_ctas}),
            (std::array<int, 4>{1, 2, 1, 0}));
  unsetenv("FP4GEMM_WGMMA_STREAM");
  const WgmmaShape ruled = wgmma_shape_to_run(64, 4096, 12288, 132, overridden);
  EXPECT_FALSE(overridden);
  EXPECT_EQ(ruled.stream_ctas, 132);
}

// Where the stream-K grid replaces the data-parallel one on 132 SMs (sm90_nvfp4_wgmma_tuning.hpp,
// kWgmmaStreamMaxFill), at every token width.
TEST(CudaNvfp4WgmmaTuning, StreamKGridWhereTheDataParallelOneLeavesSmsIdle) {
  unsetenv("FP4GEMM_WGMMA_SHAPE");
  unsetenv("FP4GEMM_WGMMA_STREAM");
  for (std::int64_t m : {17, 33, 64}) {
    const int per_sm = stream_k_ctas_per_sm(m <= 32 ? 32 : 64);
    const auto streamed = [&](std::int64_t n, std::int64_t k) {
      const WgmmaShape shape = choose_wgmma_shape(m, n, k, 132);
      if (shape.stream_ctas > 0) {
        // Two per SM where each still gets kWgmmaStreamMinChunksPerCta chunks, else one.
        const std::int64_t units = (n + 127) / 128 * ((k + 63) / 64);
        const int ctas = units >= std::int64_t(kWgmmaStreamMinChunksPerCta) * 132 * per_sm ? 132 * per_sm : 132;
        EXPECT_EQ((std::array<int, 4>{shape.warpgroups, shape.splits, shape.multicast, shape.stream_ctas}),
                  (std::array<int, 4>{kStreamKWarpgroups, 1, 1, ctas}))
            << n << "x" << k;
      }
      return shape.stream_ctas > 0;
    };
    EXPECT_TRUE(streamed(12288, 4096)) << m;   // 96 CTAs on 132 SMs: 73%
    EXPECT_TRUE(streamed(10240, 8192)) << m;   // 160 (K split in two) on 264 slots: 61%
    EXPECT_TRUE(streamed(5120, 4096)) << m;    // 80 paired CTAs: 61% (40 x 64 chunks: one stream-K CTA per SM)
    EXPECT_TRUE(streamed(24576, 4096)) << m;   // 192 on 264 slots: 73%
    EXPECT_TRUE(streamed(4096, 12288)) << m;   // one warpgroup per SM over 192 chunks
    EXPECT_FALSE(streamed(4096, 4096)) << m;   // ... over 64 chunks
    EXPECT_FALSE(streamed(8192, 8192)) << m;   // 128 CTAs: 97%
    EXPECT_FALSE(streamed(16384, 4096)) << m;  // 128
    // 224 on 264 slots (85%): two CTAs on 92 SMs, one on 40. Stream-K where its CTAs fit two per
    // SM (32 tokens), not where they fit one (64).
    EXPECT_EQ(streamed(14336, 8192), per_sm == 2) << m;
    EXPECT_EQ(streamed(28672, 8192), per_sm == 2) << m;
    EXPECT_EQ(streamed(57344, 8192), per_sm == 2) << m;  // 448 on 528 slots: 85%
    EXPECT_FALSE(streamed(33792, 8192)) << m;            // 264 on 264
    EXPECT_FALSE(streamed(12288, 512)) << m;   // 96 x 8 chunks: fewer than 16 a CTA
  }
  EXPECT_EQ(stream_k_ctas_per_sm(16), 2);
  EXPECT_EQ(stream_k_ctas_per_sm(32), 2);
  EXPECT_EQ(stream_k_ctas_per_sm(64), 1);
  EXPECT_FALSE(choose_wgmma_shape(64, 12288, 4096, 0).stream_ctas > 0);  // the SM count unknown
}

// The stream-K partition of a shape: its row blocks are the grid's rows, and it never has more
// CTAs than (row block, chunk) pairs.
TEST(CudaNvfp4WgmmaTuning, StreamPartitionOfAShape) {
  const StreamKPartition partition = wgmma_stream_partition(WgmmaShape{64, 2, 1, 1, 132}, 12288, 4096);
  EXPECT_EQ(partition.row_blocks, 96);
  EXPECT_EQ(partition.chunks, 64);
  EXPECT_EQ(partition.ctas, 132);
  const StreamKPartition tiny = wgmma_stream_partition(WgmmaShape{16, 1, 1, 1, 132}, 7, 1040);
  EXPECT_EQ(tiny.row_blocks, 1);
  EXPECT_EQ(tiny.chunks, 17);
  EXPECT_EQ(tiny.ctas, 17);
  EXPECT_EQ(wgmma_stream_partition(WgmmaShape{64, 2, 1}, 12288, 4096).ctas, 0);  // no stream-K grid
}

#ifdef FP4GEMM_WITH_CUDA
// The wgmma epilogue splits a CTA's rows evenly over its K splits, so only powers of two run.
TEST(CudaNvfp4WgmmaTuning, WgmmaSplitsThatAreNotAPowerOfTwoAreNotCompiled) {
  EXPECT_TRUE(is_compiled_wgmma_shape(WgmmaShape{64, 1, 4, 1}));
  EXPECT_FALSE(is_compiled_wgmma_shape(WgmmaShape{64, 1, 3, 1}));
  EXPECT_FALSE(is_compiled_wgmma_shape(WgmmaShape{64, 2, 6, 1}));
}
#endif

}  // namespace
}  // namespace fp4gemm::cuda_nvfp4
