#pragma once
// The shared memory of the decoder-warp wgmma kernel (sm90_decoder_gemm.cu), host- and
// device-visible so that the host tests can check it.
#include <cstdint>

#include "backends/cuda_decode/activation_pack_layout.hpp"
#include "backends/cuda_decode/decode_layout.hpp"
#include "backends/cuda_decode/decode_tuning.hpp"

namespace fp4gemm::cuda_decode {

// In this order: the weight ring (one 128-row record per stage), the activation ring (one packed
// chunk per stage), the decoded ring (128 rows x 64 columns of BF16 per stage, the wgmma A image of
// decoded_offset), the scale table and the mbarriers. Every region starts 128-byte aligned. After
// the main loop the FP32 partial tile (128 rows x tokens, one spare column so that the transposed
// writes spread over banks) reuses the decoded ring.
struct DecoderLayout {
  int tokens;
  static constexpr int kRows = kTileRows * kTilesPerBlock;
  static constexpr int kDecodedBytes = kRows * kChunkK * 2;
  static constexpr int kDecodedBlockBytes = kRows * 16 * 2;  // one MMA block (16 columns) of all rows
  constexpr int activation_offset() const { return kDecoderWeightStages * kRecordBytes; }
  constexpr int chunk_bytes() const { return int(packed_chunk_bytes(tokens)); }
  constexpr int decoded_offset() const { return activation_offset() + kDecoderActivationStages * chunk_bytes(); }
  constexpr int table_offset() const { return decoded_offset() + kDecoderDecodedStages * kDecodedBytes; }
  constexpr int barrier_offset() const { return table_offset() + 256 * 4; }
  // full and empty per weight, activation and decoded stage.
  static constexpr int kBarriers = 2 * (kDecoderWeightStages + kDecoderActivationStages + kDecoderDecodedStages);
  constexpr int bytes() const { return barrier_offset() + kBarriers * 8; }
  constexpr int partial_stride() const { return tokens + 1; }  // floats per partial row
  constexpr int partial_bytes() const { return kRows * partial_stride() * 4; }
};
static_assert(DecoderLayout{64}.bytes() <= kSm90SharedBytesPerBlock, "one CTA fits an SM's shared memory");
static_assert(DecoderLayout{64}.partial_bytes() <= kDecoderDecodedStages * DecoderLayout::kDecodedBytes,
              "the partial tile fits in the decoded ring it reuses");

// Byte offset, inside a decoded stage, of row `row` (0..127), k-slot `slot` (0..15) of MMA block
// `block`: the no-swizzle K-major core-matrix image (8 rows x 8 k-slots, 128 contiguous bytes)
// that activation_pack_layout.hpp uses for B, so a warpgroup's A descriptor for 64 rows is the
// same kind as B's (k step kCoreMatrixKStep, row step kCoreMatrixNStep). The k-slots carry the
// chunk's K permutation exactly as the register fragments do (decode_layout.hpp).
constexpr int decoded_offset(int row, int slot, int block) {
  return block * DecoderLayout::kDecodedBlockBytes + (row / 8) * kCoreMatrixNStep + (slot / 8) * kCoreMatrixKStep + (row % 8) * 16 +
         (slot % 8) * 2;
}

}  // namespace fp4gemm::cuda_decode
