#pragma once
// How the stream-K grid of the wgmma kernel (sm90_nvfp4_wgmma_gemm.cu) shares the work: the problem's
// work units are (row block, chunk) pairs, row block after row block, and CTA i takes the units
// [units * i / ctas, units * (i + 1) / ctas), so CTAs differ by at most one chunk however the row
// blocks fall on the SMs. A CTA's range crosses row blocks; its part of each is a *segment*.
//
// A row block shared by several CTAs is summed by the last of them, its *finisher* (the one that
// holds the block's last chunk); the others, its *contributors*, leave their FP32 partial sums in
// a workspace slot of their own and raise their flag. A CTA walks its segments from its last row
// block to its first, so:
// - a contributor's part of a block (the block's head, or a middle part when the CTA lies inside
//   one block) is its first segment or its only one, and its flag rises early;
// - a finisher's part (the block's tail) is its last segment, so it waits, at its very end, only
//   for CTAs of lower index. Those were started no later than it and never wait for it, so the
//   waits cannot deadlock even when the GPU holds fewer CTAs at once than the grid has.
// The finisher adds its own sums and then the contributors' in CTA order: deterministic.
#include <cstdint>

#include "backends/cuda_common/host_device.hpp"

namespace fp4gemm::cuda_nvfp4 {

struct StreamKPartition {
  std::int64_t row_blocks = 0;
  int chunks = 0;  // chunks per row block (K / 64, rounded up)
  int ctas = 0;    // at most row_blocks * chunks, so that no CTA is empty

  FP4GEMM_HOST_DEVICE std::int64_t units() const { return row_blocks * chunks; }
  // The first unit of CTA `cta` (cta = ctas gives the end of the last one).
  FP4GEMM_HOST_DEVICE std::int64_t first_unit(int cta) const { return units() * cta / ctas; }
  // The CTA whose range holds `unit`: the largest i with first_unit(i) <= unit.
  FP4GEMM_HOST_DEVICE int cta_of_unit(std::int64_t unit) const { return int(((unit + 1) * ctas - 1) / units()); }
  // Row blocks CTA `cta` has a part of.
  FP4GEMM_HOST_DEVICE int segments(int cta) const {
    return int((first_unit(cta + 1) - 1) / chunks - first_unit(cta) / chunks + 1);
  }
};

// One CTA's part of one row block: chunks [chunk_begin, chunk_begin + chunk_count).
struct StreamKSegment {
  std::int64_t row_block = 0;
  int chunk_begin = 0, chunk_count = 0;
  int first_cta = 0;  // the lowest CTA with a part of this row block

  // Whether the CTA owns the whole row block (it stores it alone).
  FP4GEMM_HOST_DEVICE bool whole(int chunks) const { return chunk_begin == 0 && chunk_count == chunks; }
  // Whether another CTA finishes the block (this part ends before its last chunk).
  FP4GEMM_HOST_DEVICE bool contributes(int chunks) const { return chunk_begin + chunk_count < chunks; }
};

// Segment `index` of CTA `cta` in the order the CTA walks them (its last row block first).
FP4GEMM_HOST_DEVICE StreamKSegment stream_k_segment(const StreamKPartition& partition, int cta, int index) {
  const std::int64_t begin = partition.first_unit(cta), end = partition.first_unit(cta + 1);
  const std::int64_t chunks = partition.chunks;
  StreamKSegment segment;
  segment.row_block = (end - 1) / chunks - index;
  const std::int64_t block_begin = segment.row_block * chunks;
  const std::int64_t first = begin > block_begin ? begin : block_begin;
  const std::int64_t last = end < block_begin + chunks ? end : block_begin + chunks;
  segment.chunk_begin = int(first - block_begin);
  segment.chunk_count = int(last - first);
  segment.first_cta = partition.cta_of_unit(block_begin);
  return segment;
}

}  // namespace fp4gemm::cuda_nvfp4
