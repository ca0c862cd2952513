#pragma once
// The `cpu` backend's weight layout ("row quads").
//
// Weight rows are taken four at a time (a tile) and K 64 elements at a time (a group, four NVFP4
// blocks). Each tile's groups are stored one after another, 144 bytes each:
//   bytes [32r, 32r + 32)       codes of tile row r: byte j = code(k = j) | code(k = 32 + j) << 4
//   bytes [128 + 4r, 132 + 4r)  the E4M3 scales of tile row r's four blocks
// Why: a thread then streams its tile as one sequential run of memory (the hardware prefetcher
// follows one stream, not eight: measured 30 -> 47 GB/s on the 2-core EPYC), and 32 bytes widened
// to 16-bit lanes give blocks 0-1 in the low nibbles and blocks 2-3 in the high nibbles, each in
// element order, so the decoded weights line up with contiguous activations without shuffles.
// Rows are padded to a multiple of 4 and K to a multiple of 64 with zero codes and zero scales,
// so the padding contributes exact zeros. Bytes per element: 0.5625, as in the checkpoint.
#include <cstdint>
#include <vector>

#include "fp4gemm/backend.hpp"

namespace fp4gemm {

inline constexpr std::int64_t kCpuTileRows = 4;
inline constexpr std::int64_t kCpuGroupK = 64;
inline constexpr std::int64_t kCpuGroupCodeBytes = kCpuTileRows * kCpuGroupK / 2;  // 128
inline constexpr std::int64_t kCpuGroupBytes = kCpuGroupCodeBytes + kCpuTileRows * 4;  // + scales: 144

struct CpuWeight final : PreparedWeight {
  std::int64_t tiles = 0;   // ceil(rows / 4)
  std::int64_t groups = 0;  // ceil(K / 64)
  std::vector<std::uint8_t> data;  // [tiles][groups][kCpuGroupBytes]

  // The first byte of (tile, group).
  const std::uint8_t* group_data(std::int64_t tile, std::int64_t group) const {
    return data.data() + (tile * groups + group) * kCpuGroupBytes;
  }
  std::uint8_t* group_data(std::int64_t tile, std::int64_t group) {
    return data.data() + (tile * groups + group) * kCpuGroupBytes;
  }
  // Elements of K the groups cover (K rounded up to 64): the activation row stride the kernels use.
  std::int64_t padded_k() const { return groups * kCpuGroupK; }
  // Weight rows including the padding of the last tile: the accumulator row stride.
  std::int64_t padded_rows() const { return tiles * kCpuTileRows; }
};

}  // namespace fp4gemm
