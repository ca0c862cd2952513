#pragma once
// Scale layouts: linear [rows, cols/16] and swizzled 128x4 (cuBLASLt VEC16_UE4M3, CUTLASS):
// rows padded to 128, scale columns padded to 4, tiles of 128 rows x 4 columns stored as 512
// contiguous bytes; padding bytes are zero.
#include <cstdint>
#include <vector>

namespace fp4gemm::scale_layout {

inline constexpr std::int64_t kBlock = 16;  // elements along K sharing one E4M3 scale

inline std::int64_t scale_cols(std::int64_t cols) { return cols / kBlock; }
std::int64_t padded_rows(std::int64_t rows);
std::int64_t padded_scale_cols(std::int64_t cols);
std::int64_t swizzled_bytes(std::int64_t rows, std::int64_t cols);

// Byte offset of scale (row, scale_col) in the swizzled layout:
// (row/128)*(kTiles*512) + (scale_col/4)*512 + (row%32)*16 + ((row%128)/32)*4 + scale_col%4,
// with kTiles = ceil(scale_cols / 4).
std::int64_t swizzled_offset(std::int64_t row, std::int64_t scale_col, std::int64_t cols);

std::vector<std::uint8_t> to_swizzled(const std::uint8_t* linear, std::int64_t rows, std::int64_t cols);
std::vector<std::uint8_t> to_linear(const std::uint8_t* swizzled, std::int64_t rows, std::int64_t cols);

}  // namespace fp4gemm::scale_layout
