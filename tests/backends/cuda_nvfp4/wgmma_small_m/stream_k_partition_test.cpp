// The stream-K work split of the wgmma kernel (sm90_nvfp4_wgmma_stream_k.hpp), checked on the host for
// the properties the kernel's correctness rests on: every (row block, chunk) unit is walked by
// exactly one CTA, CTA loads differ by at most one chunk, each shared row block has exactly one
// finisher (the CTA of its last chunk) whose contributors are exactly the lower CTAs that hold a
// part of it, a contributor's part is its first segment, and a finisher's is its last.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <vector>

#include "backends/cuda_nvfp4/wgmma_small_m/sm90_nvfp4_wgmma_stream_k.hpp"

namespace fp4gemm::cuda_nvfp4 {
namespace {

struct BlockParts {
  std::vector<int> ctas;  // in the order they were met (CTA order)
  int covered = 0;
  int finishers = 0, whole = 0;
};

void check_partition(std::int64_t row_blocks, int chunks, int ctas) {
  const StreamKPartition partition{row_blocks, chunks, ctas};
  SCOPED_TRACE(::testing::Message() << row_blocks << " row blocks x " << chunks << " chunks over " << ctas << " CTAs");
  std::vector<std::vector<int>> seen(std::size_t(row_blocks), std::vector<int>(std::size_t(chunks), 0));
  std::map<std::int64_t, BlockParts> blocks;
  const std::int64_t lightest = partition.units() / ctas;
  for (int cta = 0; cta < ctas; ++cta) {
    const std::int64_t load = partition.first_unit(cta + 1) - partition.first_unit(cta);
    EXPECT_TRUE(load == lightest || load == lightest + 1) << "CTA " << cta << " has " << load << " units";
    const int segments = partition.segments(cta);
    ASSERT_GE(segments, 1);
    std::int64_t walked = 0, previous_block = row_blocks;
    for (int index = 0; index < segments; ++index) {
      const StreamKSegment segment = stream_k_segment(partition, cta, index);
      ASSERT_LT(segment.row_block, previous_block) << "segments go from the last row block to the first";
      previous_block = segment.row_block;
      ASSERT_GE(segment.row_block, 0);
      ASSERT_GE(segment.chunk_count, 1);
      ASSERT_LE(segment.chunk_begin + segment.chunk_count, chunks);
      for (int chunk = segment.chunk_begin; chunk < segment.chunk_begin + segment.chunk_count; ++chunk) {
        ++seen[std::size_t(segment.row_block)][std::size_t(chunk)];
        EXPECT_EQ(partition.cta_of_unit(segment.row_block * chunks + chunk), cta);
      }
      walked += segment.chunk_count;
      BlockParts& parts = blocks[segment.row_block];
      parts.ctas.push_back(cta);
      parts.covered += segment.chunk_count;
      EXPECT_EQ(segment.first_cta, partition.cta_of_unit(segment.row_block * chunks));
      if (segment.whole(chunks)) {
        ++parts.whole;
      } else if (segment.contributes(chunks)) {
        EXPECT_EQ(index, 0) << "a contributor's part is the first segment it walks";
      } else {
        ++parts.finishers;
        EXPECT_EQ(index, segments - 1) << "a finisher's part is the last segment it walks";
        EXPECT_LT(segment.first_cta, cta);
      }
    }
    EXPECT_EQ(walked, load);
  }
  for (std::int64_t block = 0; block < row_blocks; ++block) {
    for (int chunk = 0; chunk < chunks; ++chunk) ASSERT_EQ(seen[std::size_t(block)][std::size_t(chunk)], 1);
    const BlockParts& parts = blocks.at(block);
    EXPECT_EQ(parts.covered, chunks);
    EXPECT_EQ(parts.whole + parts.finishers, 1) << "row block " << block << " is stored exactly once";
    EXPECT_EQ(parts.whole == 1, parts.ctas.size() == 1);
    // The contributors are every CTA from the first one up to the finisher, with none skipped.
    for (std::size_t i = 1; i < parts.ctas.size(); ++i) EXPECT_EQ(parts.ctas[i], parts.ctas[i - 1] + 1);
  }
}

TEST(StreamKPartition, EveryUnitOnceAndEveryRowBlockStoredOnce) {
  check_partition(96, 64, 132);     // 12288x4096, 128-row blocks: 46-47 chunks per CTA
  check_partition(224, 128, 264);   // 28672x8192 at two CTAs per SM
  check_partition(32, 64, 132);     // 4096x4096: a row block over up to six CTAs
  check_partition(1, 1, 1);
  check_partition(1, 65, 7);        // one row block, every CTA inside it
  check_partition(5, 3, 15);        // one chunk per CTA
  check_partition(132, 64, 132);    // exactly one row block per CTA
  check_partition(7, 10, 3);
}

TEST(StreamKPartition, SegmentsOfEachCta) {
  const StreamKPartition partition{3, 10, 4};  // 30 units: 7, 8, 7, 8
  EXPECT_EQ(partition.first_unit(1), 7);
  EXPECT_EQ(partition.segments(0), 1);
  EXPECT_EQ(partition.segments(1), 2);  // units 7..14: block 0 chunks 7-9, block 1 chunks 0-4
  const StreamKSegment head = stream_k_segment(partition, 1, 0);
  EXPECT_EQ(head.row_block, 1);
  EXPECT_EQ(head.chunk_begin, 0);
  EXPECT_EQ(head.chunk_count, 5);
  EXPECT_TRUE(head.contributes(10));
  const StreamKSegment tail = stream_k_segment(partition, 1, 1);
  EXPECT_EQ(tail.row_block, 0);
  EXPECT_EQ(tail.chunk_begin, 7);
  EXPECT_EQ(tail.chunk_count, 3);
  EXPECT_EQ(tail.first_cta, 0);
  EXPECT_FALSE(tail.contributes(10));
  EXPECT_FALSE(tail.whole(10));
}

}  // namespace
}  // namespace fp4gemm::cuda_nvfp4
