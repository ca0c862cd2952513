#include "backends/cuda_decode/decode_layout.hpp"

#include "backends/cuda_decode/decode_bits.hpp"

#include "fp4gemm/format/e2m1.hpp"
#include "fp4gemm/format/scale_layout.hpp"

namespace fp4gemm::cuda_decode {
namespace {

// Weight element behind fragment element `index` (a0..a7) of MMA block `block` for lane group g,
// thread t: its row offset in the tile and its column in the 64-wide chunk (see the header).
void fragment_position(int index, int block, int g, int t, int& row, int& column) {
  row = g + ((index / 2) % 2) * 8;                            // a2, a3, a6, a7 are row g+8
  column = kChunkColumnOfLane * t + 4 * block + (index % 2) + (index / 4) * 2;  // a4..a7: +2
}

}  // namespace

DecodeLayout make_decode_layout(const Nvfp4View& weight) {
  DecodeLayout layout;
  layout.rows = weight.rows;
  layout.cols = weight.cols;
  layout.row_tiles = (weight.rows + kTileRows - 1) / kTileRows;
  layout.row_blocks = (layout.row_tiles + kTilesPerBlock - 1) / kTilesPerBlock;
  layout.chunks = (weight.cols + kChunkK - 1) / kChunkK;
  layout.records.assign(static_cast<std::size_t>(layout.row_blocks * layout.chunks * kRecordBytes), 0);
  const std::int64_t blocks = weight.cols / 16;
  const std::int64_t scale_columns = scale_layout::scale_cols(weight.cols);

  auto code_at = [&](std::int64_t row, std::int64_t col) -> std::uint8_t {
    if (row >= weight.rows || col >= weight.cols) return 0;
    return e2m1::unpack(weight.codes + row * (weight.cols / 2), col);
  };
  auto scale_at = [&](std::int64_t row, std::int64_t block) -> std::uint8_t {
    if (row >= weight.rows || block >= blocks) return 0;
    const std::int64_t offset = weight.scale_layout == ScaleLayout::linear
                                    ? row * scale_columns + block
                                    : scale_layout::swizzled_offset(row, block, weight.cols);
    return weight.scales[offset];
  };

  // Tiles past row_tiles (padding up to the record's 128 rows) stay zero.
  for (std::int64_t tile = 0; tile < layout.row_tiles; ++tile) {
    for (std::int64_t chunk = 0; chunk < layout.chunks; ++chunk) {
      for (int lane = 0; lane < 32; ++lane) {
        const int g = lane / 4, t = lane % 4;
        for (int block = 0; block < kBlocksPerChunk; ++block) {
          std::uint32_t word = 0;
          for (int element = 0; element < 8; ++element) {
            int row, column;
            fragment_position(element, block, g, t, row, column);
            const std::uint32_t code = code_at(tile * kTileRows + row, chunk * kChunkK + column);
            for (int bit = 0; bit < 4; ++bit) word |= ((code >> bit) & 1u) << word_bit(element, bit);
          }
          std::uint8_t* out = layout.records.data() + code_offset(tile, chunk, layout.chunks, lane) + block * 4;
          for (int byte = 0; byte < 4; ++byte) out[byte] = std::uint8_t(word >> (8 * byte));
        }
      }
      for (int lane = 0; lane < 32; ++lane) {
        const int g = lane / 4, t = lane % 4;
        const std::int64_t global_block = chunk * kBlocksPerChunk + t;  // the lane's own block
        std::uint8_t* out = layout.records.data() + scale_offset(tile, chunk, layout.chunks, lane);
        out[0] = scale_at(tile * kTileRows + g, global_block);
        out[1] = scale_at(tile * kTileRows + g + 8, global_block);
      }
    }
  }
  return layout;
}

}  // namespace fp4gemm::cuda_decode
