#pragma once
// The activations of the prefill kernel (sm90_nvfp4_prefill_gemm.cu), packed once per call so that each
// lane's four 16-byte loads per chunk land exactly in its wgmma A fragments.
//
// Why a pack: the fragment of MMA block b interleaves two activation rows (registers 0 and 2 row
// g, 1 and 3 row g + 8; weight_layout.hpp's K permutation makes each row's part 8 contiguous
// bytes), so loading the rows as they lie needs register moves after each load, and those moves
// wait for the load: the kernel then stalled on every chunk.
//
// packed: [groups of 16 rows][chunks][4 MMA blocks][32 lanes] x 16 bytes; lane (g, t) of block b
// holds rows g and g + 8 of the group at chunk columns 16t + 4b + {0, 1} (registers 0, 1) and
// 16t + 4b + {2, 3} (registers 2, 3). Rows past M and columns past K are zeros; the groups cover
// M rounded up to kPrefillCtaTokens.
#include <cuda_runtime.h>

#include <cstdint>

#include "backends/cuda_nvfp4/weight_layout.hpp"
#include "backends/cuda_nvfp4/wgmma_prefill/sm90_nvfp4_prefill_tuning.hpp"

namespace fp4gemm::cuda_nvfp4 {

inline constexpr int kPrefillGroupRows = 16;
inline constexpr std::int64_t kPrefillGroupChunkBytes = kBlocksPerChunk * 32 * 16;  // one group's chunk: 2 KiB

constexpr std::int64_t prefill_packed_groups(std::int64_t m) {
  return (m + kPrefillCtaTokens - 1) / kPrefillCtaTokens * (kPrefillCtaTokens / kPrefillGroupRows);
}
constexpr std::int64_t prefill_packed_bytes(std::int64_t m, std::int64_t chunks) {
  return prefill_packed_groups(m) * chunks * kPrefillGroupChunkBytes;
}

// BF16 activations [m, stride] (device memory; 16-byte aligned, stride a multiple of 8, as the
// backend stages any other view; cudaErrorMisalignedAddress otherwise) -> packed
// (prefill_packed_bytes); also zeroes `counters` tile counters of the prefill kernel's K split (none
// when 0). `programmatic`: launched with programmatic dependent launch.
cudaError_t launch_pack_prefill_activations(const std::uint16_t* activations, std::int64_t stride, int m, int k, int chunks, void* packed,
                                            unsigned* tile_counters, std::int64_t counters, bool programmatic, cudaStream_t stream);

}  // namespace fp4gemm::cuda_nvfp4
