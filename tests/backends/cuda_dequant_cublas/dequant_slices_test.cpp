// How cuda_dequant_cublas cuts a weight into per-call slices (host arithmetic; runs without a GPU).
#include "backends/cuda_dequant_cublas/dequant_slices.hpp"

#include <gtest/gtest.h>

namespace fp4gemm {
namespace {

TEST(DequantSlices, SliceFitsTheWorkspaceInWholeMultiplesOf128Rows) {
  // 28672 x 8192 with the default 64 MiB: 4096 rows of 16 KiB each.
  EXPECT_EQ(dequant_slice_rows(28672, 8192, kDequantWorkspaceBytes), 4096);
  EXPECT_LE(dequant_slice_rows(28672, 8192, kDequantWorkspaceBytes) * 8192 * 2, kDequantWorkspaceBytes);
  // A bound that is not a whole number of 128-row slices rounds down.
  EXPECT_EQ(dequant_slice_rows(1000, 64, 300 * 64 * 2), 256);
  for (std::int64_t cols : {16, 80, 4096, 12288}) {
    const std::int64_t rows = dequant_slice_rows(std::int64_t(1) << 20, cols, kDequantWorkspaceBytes);
    EXPECT_EQ(rows % kDequantSliceRowMultiple, 0) << cols;
    EXPECT_LE(rows * cols * 2, kDequantWorkspaceBytes) << cols;
  }
}

TEST(DequantSlices, SmallWeightIsOneSliceOfItsOwnRows) {
  EXPECT_EQ(dequant_slice_rows(7, 4096, kDequantWorkspaceBytes), 7);
  EXPECT_EQ(dequant_slice_rows(4096, 4096, kDequantWorkspaceBytes), 4096);  // 32 MiB: whole
}

TEST(DequantSlices, HugeKStillTakesOneMultiple) {
  // 128 rows of K = 2^20 are 256 MiB, above the bound: the slice is one multiple, not zero rows.
  EXPECT_EQ(dequant_slice_rows(1000, std::int64_t(1) << 20, kDequantWorkspaceBytes), kDequantSliceRowMultiple);
}

TEST(DequantSlices, EmptyWeightHasNoSlices) {
  EXPECT_EQ(dequant_slice_rows(0, 64, kDequantWorkspaceBytes), 0);
  EXPECT_EQ(dequant_slice_rows(64, 0, kDequantWorkspaceBytes), 0);
}

}  // namespace
}  // namespace fp4gemm
