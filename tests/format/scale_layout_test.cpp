#include <gtest/gtest.h>

#include <random>

#include "fp4gemm/format/scale_layout.hpp"

namespace fp4gemm {
namespace {

TEST(ScaleLayout, OffsetFollowsTheDocumentedFormula) {
  // K = 80 -> 5 scale columns -> 2 tiles of 4 columns (padded to 8).
  const std::int64_t cols = 80;
  EXPECT_EQ(scale_layout::padded_scale_cols(cols), 8);
  EXPECT_EQ(scale_layout::swizzled_offset(0, 0, cols), 0);
  EXPECT_EQ(scale_layout::swizzled_offset(0, 1, cols), 1);
  EXPECT_EQ(scale_layout::swizzled_offset(0, 4, cols), 512);
  EXPECT_EQ(scale_layout::swizzled_offset(1, 0, cols), 16);
  EXPECT_EQ(scale_layout::swizzled_offset(32, 0, cols), 4);
  EXPECT_EQ(scale_layout::swizzled_offset(33, 2, cols), 16 + 4 + 2);
  EXPECT_EQ(scale_layout::swizzled_offset(127, 3, cols), 31 * 16 + 3 * 4 + 3);
  EXPECT_EQ(scale_layout::swizzled_offset(128, 0, cols), 2 * 512);
  EXPECT_EQ(scale_layout::swizzled_offset(130, 5, cols), 2 * 512 + 512 + 2 * 16 + 1);
}

TEST(ScaleLayout, RoundTripsAtPaddedShapesWithZeroPadding) {
  std::mt19937 rng(7);
  for (std::int64_t rows : {1, 7, 127, 128, 129, 300}) {
    for (std::int64_t cols : {16, 48, 64, 80, 4096}) {
      const std::int64_t columns = cols / 16;
      std::vector<std::uint8_t> linear(static_cast<std::size_t>(rows * columns));
      for (auto& byte : linear) byte = std::uint8_t(1 + rng() % 0x7E);  // nonzero, so padding is visible
      const auto swizzled = scale_layout::to_swizzled(linear.data(), rows, cols);
      ASSERT_EQ(std::int64_t(swizzled.size()), scale_layout::padded_rows(rows) * scale_layout::padded_scale_cols(cols));
      std::int64_t nonzero = 0;
      for (auto byte : swizzled) nonzero += byte != 0;
      EXPECT_EQ(nonzero, rows * columns) << "padding bytes must be zero";
      EXPECT_EQ(scale_layout::to_linear(swizzled.data(), rows, cols), linear);
      for (std::int64_t row = 0; row < rows; row += 37)
        for (std::int64_t col = 0; col < columns; ++col)
          EXPECT_EQ(swizzled[scale_layout::swizzled_offset(row, col, cols)], linear[row * columns + col]);
    }
  }
}

}  // namespace
}  // namespace fp4gemm
