#pragma once
// How `cuda_dequant_cublas` cuts a weight into the slices it dequantizes per call (host arithmetic,
// built without CUDA too so the host tests check it). See dequant_cublas_backend.hpp.
#include <cstdint>

namespace fp4gemm {

// NOTE: not measured yet (the per-call path is new): the bound trades L2 reuse between the
// dequantize kernel and the GEMM (the H200 has 50 MB of L2) against GEMMs over fewer rows.
inline constexpr std::int64_t kDequantWorkspaceBytes = std::int64_t(64) << 20;
// Slices start at multiples of this many rows, so each slice's output columns start 256-byte
// aligned in a row-major output whose rows are.
inline constexpr std::int64_t kDequantSliceRowMultiple = 128;

// Rows of W dequantized per slice for a weight of `rows` x `cols`: a multiple of
// kDequantSliceRowMultiple whose BF16 bytes fit `workspace_bytes` (one multiple at least, when K
// alone is too large), and no more than the weight has. 0 for an empty weight.
std::int64_t dequant_slice_rows(std::int64_t rows, std::int64_t cols, std::int64_t workspace_bytes);

}  // namespace fp4gemm
