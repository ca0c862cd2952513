#pragma once
// The `cpu` backend's weight layout ("block pairs").
//
// Per weight row, blocks (16 elements along K) are taken two at a time. Pair p stores 16 bytes:
// byte j = code(block 2p, element j) | code(block 2p+1, element j) << 4. So one 16-byte load,
// widened to 32-bit lanes, gives block 2p in the low nibbles and block 2p+1 in the high nibbles,
// each in natural element order: no shuffles are needed to line the weights up with activations.
// A row with an odd number of blocks is padded with a zero block whose scale is 0.
// Scales stay E4M3 bytes ([rows, 2*pairs]) so the weight streams at 0.5625 B/element.
#include <cstdint>
#include <vector>

#include "fp4gemm/backend.hpp"

namespace fp4gemm {

struct CpuWeight final : PreparedWeight {
  std::int64_t pairs = 0;                  // block pairs per row
  std::vector<std::uint8_t> pair_codes;    // [rows, pairs * 16]
  std::vector<std::uint8_t> block_scales;  // [rows, pairs * 2], E4M3
};

// Elements of K covered by a row's pairs (K rounded up to 32).
inline std::int64_t padded_k(std::int64_t pairs) { return pairs * 32; }

}  // namespace fp4gemm
