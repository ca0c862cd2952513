#include "backends/cuda_nvfp4/weight_layout.hpp"

#include <array>

#include "backends/cuda_nvfp4/weight_bits.hpp"
#include "fp4gemm/format/e2m1.hpp"
#include "fp4gemm/format/scale_layout.hpp"

namespace fp4gemm::cuda_nvfp4 {
namespace {

// Below this many weight elements the reorder runs on the calling thread (an OpenMP team costs
// more than the work).
constexpr std::int64_t kParallelMinElements = 1 << 20;

// A lane's word for one MMA block holds 8 codes: 4 consecutive columns (16t + 4b + {0..3}) of
// row g and the same 4 of row g+8. Those 4 columns are 2 whole bytes of each row, so the word is
// table[row g's 2 bytes] | table[row g+8's 2 bytes] (see weight_layout.hpp for the positions):
// two lookups instead of 32 bit moves per word.
struct WordTables {
  std::array<std::uint32_t, 1 << 16> row_g{}, row_g8{};
};

// Fragment element (a0..a7) of chunk column 16t + 4b + j in row g (j = 0..3), and in row g+8:
// a0, a1 are row g, columns +0, +1; a2, a3 row g+8, +0, +1; a4..a7 the same two rows at +2, +3.
constexpr int kElementOfRowG[4] = {0, 1, 4, 5};
constexpr int kElementOfRowG8[4] = {2, 3, 6, 7};

WordTables make_word_tables() {
  WordTables tables;
  for (std::uint32_t pair = 0; pair < (1u << 16); ++pair) {
    const std::uint8_t bytes[2] = {std::uint8_t(pair & 0xFF), std::uint8_t(pair >> 8)};
    std::uint32_t g = 0, g8 = 0;
    for (int j = 0; j < 4; ++j) {
      const std::uint32_t code = e2m1::unpack(bytes, j);
      for (int bit = 0; bit < 4; ++bit) {
        g |= ((code >> bit) & 1u) << word_bit(kElementOfRowG[j], bit);
        g8 |= ((code >> bit) & 1u) << word_bit(kElementOfRowG8[j], bit);
      }
    }
    tables.row_g[pair] = g;
    tables.row_g8[pair] = g8;
  }
  return tables;
}

const WordTables& word_tables() {
  static const WordTables tables = make_word_tables();
  return tables;
}

}  // namespace

DecodeLayout make_decode_layout(const Nvfp4View& weight) {
  DecodeLayout layout;
  layout.rows = weight.rows;
  layout.cols = weight.cols;
  layout.row_tiles = (weight.rows + kTileRows - 1) / kTileRows;
  layout.row_blocks = (layout.row_tiles + kTilesPerBlock - 1) / kTilesPerBlock;
  layout.chunks = chunks_covering(weight.cols);
  layout.records.assign(static_cast<std::size_t>(layout.row_blocks * layout.chunks * kRecordBytes), 0);
  const std::int64_t blocks = weight.cols / 16;
  const std::int64_t row_bytes = weight.cols / 2;
  const std::int64_t scale_columns = scale_layout::scale_cols(weight.cols);
  const WordTables& tables = word_tables();

  // The two bytes of `row` holding chunk columns [column, column + 4); zero past the weight (K is
  // a multiple of 16, so a lane's 4 columns are all inside K or all outside).
  auto byte_pair = [&](std::int64_t row, std::int64_t column) -> std::uint32_t {
    if (row >= weight.rows || column >= weight.cols) return 0;
    const std::uint8_t* bytes = weight.codes + row * row_bytes + column / 2;
    return std::uint32_t(bytes[0]) | (std::uint32_t(bytes[1]) << 8);
  };
  auto scale_at = [&](std::int64_t row, std::int64_t block) -> std::uint8_t {
    if (row >= weight.rows || block >= blocks) return 0;
    const std::int64_t offset = weight.scale_layout == ScaleLayout::linear
                                    ? row * scale_columns + block
                                    : scale_layout::swizzled_offset(row, block, weight.cols);
    return weight.scales[offset];
  };

  // Tiles past row_tiles (padding up to the record's 128 rows) stay zero. Tiles write disjoint
  // bytes, so they run in parallel.
#pragma omp parallel for schedule(static) if (weight.rows * weight.cols >= kParallelMinElements)
  for (std::int64_t tile = 0; tile < layout.row_tiles; ++tile) {
    for (std::int64_t chunk = 0; chunk < layout.chunks; ++chunk) {
      for (int lane = 0; lane < 32; ++lane) {
        const int g = lane / 4, t = lane % 4;
        const std::int64_t row = tile * kTileRows + g;
        std::uint8_t* out = layout.records.data() + code_offset(tile, chunk, layout.chunks, lane);
        for (int block = 0; block < kBlocksPerChunk; ++block) {
          const std::int64_t column = chunk * kChunkK + kChunkColumnOfLane * t + 4 * block;
          const std::uint32_t word = tables.row_g[byte_pair(row, column)] | tables.row_g8[byte_pair(row + 8, column)];
          for (int byte = 0; byte < 4; ++byte) out[block * 4 + byte] = std::uint8_t(word >> (8 * byte));
        }
        // The lane's own NVFP4 block of the chunk (block t), rows g and g+8.
        const std::int64_t global_block = chunk * kBlocksPerChunk + t;
        std::uint8_t* scales = layout.records.data() + scale_offset(tile, chunk, layout.chunks, lane);
        scales[0] = scale_at(row, global_block);
        scales[1] = scale_at(row + 8, global_block);
      }
    }
  }
  return layout;
}

}  // namespace fp4gemm::cuda_nvfp4
