#pragma once
// The weight layout of `cuda_nvfp4` (host side: built once by prepare(), then uploaded).
//
// The kernel computes out^T = W * A^T with mma.sync.m16n8k16 (BF16 in, FP32 accumulate): weight
// rows are the MMA's M dimension, activation rows its N dimension. A warp owns one tile of 16 weight
// rows (or two neighbouring ones, sm80_nvfp4_mma_tuning.hpp) and walks K in chunks of 64 (four 16-element
// NVFP4 blocks).
//
// K is permuted inside each 64-wide chunk, identically for weights and activations (a sum over K
// does not care about order): MMA block b's k-slots 2t, 2t+1, 2t+8, 2t+9 hold the chunk's columns
// 16t + 4b + {0, 1, 2, 3}. So lane t of every group works on the chunk's NVFP4 block t only: one
// scale per row per chunk instead of four, and its activations are 16 contiguous elements.
//
// The weight is stored as records, one per (row block of 8 tiles = 128 rows, chunk), in the order
// [row_blocks][chunks], each kRecordBytes = 4608 bytes: first the codes of the 8 tiles, then their
// scales, so that one 1-D bulk copy moves everything a 128-row CTA needs for a chunk.
// codes:  [8 tiles][32 lanes] x 16 bytes. Lane L (group g = L/4, t = L%4) holds, for each of the
//         4 MMA blocks, one 32-bit word with exactly the 8 elements of its A fragment: rows g and
//         g+8, chunk columns 16t + 4b + {0, 1, 2, 3}. The bits of those 8 codes are spread over
//         the word (weight_bits.hpp) so that each fragment register is cut out with one or two
//         integer instructions. One 16-byte load per lane per chunk; a warp reads 512 contiguous bytes.
// scales: [8 tiles][32 lanes] x 2 bytes: the E4M3 scales of the lane's own NVFP4 block (chunk
//         block t) in rows g (byte 0) and g+8 (byte 1). One 2-byte load per lane per chunk, no
//         lane reads another's scales; a warp reads 64 contiguous bytes.
// Rows are padded to a multiple of 128 and K to a multiple of 64 with zero codes and zero scales,
// so padding contributes exact zeros. Bytes per element: 0.5 (codes) + 1/16 (scales), unchanged.
#include <cstdint>
#include <vector>

#include "fp4gemm/types.hpp"

namespace fp4gemm::cuda_nvfp4 {

inline constexpr int kTileRows = 16;
inline constexpr int kChunkK = 64;
inline constexpr int kBlocksPerChunk = kChunkK / 16;
inline constexpr int kChunkColumnOfLane = 16;  // lane t of a group owns chunk columns [16t, 16t+16)
inline constexpr int kTilesPerBlock = 8;       // row tiles per record (128 rows)
inline constexpr int kTileCodeBytes = 32 * 16;  // one tile's codes of one chunk
inline constexpr int kTileScaleBytes = 32 * 2;  // one tile's scales of one chunk
inline constexpr int kRecordCodeBytes = kTilesPerBlock * kTileCodeBytes;
inline constexpr int kRecordBytes = kRecordCodeBytes + kTilesPerBlock * kTileScaleBytes;

// Chunks of kChunkK columns covering K (the last one zero-padded).
constexpr std::int64_t chunks_covering(std::int64_t k) { return (k + kChunkK - 1) / kChunkK; }

// Byte offsets of lane `lane`'s codes and scales of row tile `tile`, chunk `chunk`.
constexpr std::int64_t record_offset(std::int64_t tile, std::int64_t chunk, std::int64_t chunks) {
  return ((tile / kTilesPerBlock) * chunks + chunk) * kRecordBytes;
}
constexpr std::int64_t code_offset(std::int64_t tile, std::int64_t chunk, std::int64_t chunks, int lane) {
  return record_offset(tile, chunk, chunks) + (tile % kTilesPerBlock) * kTileCodeBytes + lane * 16;
}
constexpr std::int64_t scale_offset(std::int64_t tile, std::int64_t chunk, std::int64_t chunks, int lane) {
  return record_offset(tile, chunk, chunks) + kRecordCodeBytes + (tile % kTilesPerBlock) * kTileScaleBytes + lane * 2;
}

struct DecodeLayout {
  std::int64_t rows = 0, cols = 0;
  std::int64_t row_tiles = 0;   // tiles holding weight rows, (rows + 15) / 16
  std::int64_t row_blocks = 0;  // records along the rows, (rows + 127) / 128
  std::int64_t chunks = 0;
  std::vector<std::uint8_t> records;  // row_blocks * chunks * kRecordBytes
};

// Reorders a host NVFP4 weight (linear or swizzled scales) into the layout above.
DecodeLayout make_decode_layout(const Nvfp4View& weight);

}  // namespace fp4gemm::cuda_nvfp4
