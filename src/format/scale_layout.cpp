#include "fp4gemm/format/scale_layout.hpp"

#include "fp4gemm/error.hpp"

namespace fp4gemm::scale_layout {
namespace {
constexpr std::int64_t kTileRows = 128;
constexpr std::int64_t kTileScaleCols = 4;
constexpr std::int64_t kTileBytes = kTileRows * kTileScaleCols;  // 512
}  // namespace

std::int64_t padded_rows(std::int64_t rows) { return (rows + kTileRows - 1) / kTileRows * kTileRows; }

std::int64_t padded_scale_cols(std::int64_t cols) {
  return (scale_cols(cols) + kTileScaleCols - 1) / kTileScaleCols * kTileScaleCols;
}

std::int64_t swizzled_bytes(std::int64_t rows, std::int64_t cols) {
  return padded_rows(rows) * padded_scale_cols(cols);
}

std::int64_t swizzled_offset(std::int64_t row, std::int64_t scale_col, std::int64_t cols) {
  const std::int64_t k_tiles = padded_scale_cols(cols) / kTileScaleCols;
  return (row / kTileRows) * (k_tiles * kTileBytes) + (scale_col / kTileScaleCols) * kTileBytes +
         (row % 32) * 16 + ((row % kTileRows) / 32) * 4 + scale_col % kTileScaleCols;
}

std::vector<std::uint8_t> to_swizzled(const std::uint8_t* linear, std::int64_t rows, std::int64_t cols) {
  if (cols % kBlock != 0) throw_invalid("scale layout: cols must be a multiple of 16");
  std::vector<std::uint8_t> swizzled(static_cast<std::size_t>(swizzled_bytes(rows, cols)), 0);
  const std::int64_t columns = scale_cols(cols);
  for (std::int64_t row = 0; row < rows; ++row)
    for (std::int64_t col = 0; col < columns; ++col)
      swizzled[std::size_t(swizzled_offset(row, col, cols))] = linear[row * columns + col];
  return swizzled;
}

std::vector<std::uint8_t> to_linear(const std::uint8_t* swizzled, std::int64_t rows, std::int64_t cols) {
  if (cols % kBlock != 0) throw_invalid("scale layout: cols must be a multiple of 16");
  const std::int64_t columns = scale_cols(cols);
  std::vector<std::uint8_t> linear(static_cast<std::size_t>(rows * columns));
  for (std::int64_t row = 0; row < rows; ++row)
    for (std::int64_t col = 0; col < columns; ++col)
      linear[std::size_t(row * columns + col)] = swizzled[swizzled_offset(row, col, cols)];
  return linear;
}

}  // namespace fp4gemm::scale_layout
