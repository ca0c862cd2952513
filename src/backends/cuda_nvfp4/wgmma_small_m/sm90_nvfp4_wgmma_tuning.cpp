#include "backends/cuda_nvfp4/wgmma_small_m/sm90_nvfp4_wgmma_tuning.hpp"

#include <algorithm>
#include <bit>
#include <cstdio>
#include <string>

#include "backends/cuda_nvfp4/weight_layout.hpp"
#include "backends/cuda_nvfp4/overrides.hpp"
#include "fp4gemm/error.hpp"

namespace fp4gemm::cuda_nvfp4 {

WgmmaShape choose_wgmma_shape(std::int64_t m, std::int64_t n, std::int64_t k, int multiprocessors) {
  const WgmmaShape shape = choose_data_parallel_wgmma_shape(m, n, k, multiprocessors);
  if (stream_k_reason(shape, n, k, multiprocessors) == StreamKReason::none) return shape;
  // As many CTAs as the SMs hold, or one per SM where that would leave a CTA too few chunks.
  for (int per_sm = stream_k_ctas_per_sm(shape.tokens); per_sm >= 1; --per_sm) {
    const int ctas = per_sm * multiprocessors;
    const WgmmaShape streamed{shape.tokens, kStreamKWarpgroups, 1, 1, ctas};
    const StreamKPartition partition = wgmma_stream_partition(streamed, n, k);
    if (partition.ctas == ctas && partition.units() >= std::int64_t(kWgmmaStreamMinChunksPerCta) * ctas) return streamed;
  }
  return shape;
}

StreamKReason stream_k_reason(const WgmmaShape& data_parallel, std::int64_t n, std::int64_t k, int multiprocessors) {
  if (multiprocessors <= 0) return StreamKReason::none;
  const double fill = wgmma_grid_fill(data_parallel, n, multiprocessors);
  if (fill < kWgmmaStreamMaxFill) return StreamKReason::idle;
  if (stream_k_ctas_per_sm(data_parallel.tokens) > 1 && wgmma_grid_ctas(data_parallel, n) > multiprocessors &&
      fill < kWgmmaStreamCrowdedMaxFill) {
    return StreamKReason::crowded;
  }
  if (data_parallel.warpgroups == 1 && chunks_covering(k) >= kWgmmaStreamOneWarpgroupMinChunks) return StreamKReason::lone_warpgroups;
  return StreamKReason::none;
}

double wgmma_grid_fill(const WgmmaShape& shape, std::int64_t n, int multiprocessors) {
  const std::int64_t ctas = wgmma_grid_ctas(shape, n);
  const std::int64_t slots = std::int64_t(ctas <= multiprocessors ? 1 : kWgmmaCrowdedCtasPerSm) * multiprocessors;
  return double(ctas) / double((ctas + slots - 1) / slots * slots);
}

WgmmaShape choose_data_parallel_wgmma_shape(std::int64_t m, std::int64_t n, std::int64_t k, int multiprocessors) {
  WgmmaShape shape;
  shape.tokens = m <= 16 ? 16 : m <= 32 ? 32 : 64;
  // 64-row CTAs (one warpgroup) while they fit kWgmmaCtasPerSm per SM, else 128-row ones. Then
  // split K (powers of two) while the doubled grid still fits one CTA per SM, keeping kMinWgmmaChunksPerSplit chunks
  // per split; unsplit 64-row CTAs of a long K become split 128-row ones (kWgmmaPairedSplitMinChunks),
  // and unsplit 128-row ones of a long K that leave SMs idle split K in two (kWgmmaIdleSplitMinChunks).
  const std::int64_t half_blocks = (n + 63) / 64;
  shape.warpgroups = half_blocks <= std::int64_t(kWgmmaCtasPerSm) * multiprocessors ? 1 : 2;
  const std::int64_t ctas = (n + 64 * shape.warpgroups - 1) / (64 * shape.warpgroups);
  const std::int64_t chunks = chunks_covering(k);
  shape.multicast = kWgmmaMulticast;
  shape.splits = 1;
  while (shape.multicast * shape.splits * 2 <= kMaxWgmmaCluster && ctas * shape.splits * 2 <= multiprocessors &&
         chunks >= std::int64_t(kMinWgmmaChunksPerSplit) * shape.splits * 2) {
    shape.splits *= 2;
  }
  static_assert(2 * kWgmmaMulticast <= kMaxWgmmaCluster, "the paired and idle splits' clusters fit");
  const WgmmaShape paired{shape.tokens, 2, 2, shape.multicast};  // kWgmmaPairedSplitMinChunks
  if (shape.warpgroups == 1 && shape.splits == 1 && chunks >= kWgmmaPairedSplitMinChunks &&
      wgmma_grid_ctas(paired, n) <= multiprocessors) {
    shape = paired;
  }
  if (shape.warpgroups == 2 && shape.splits == 1 && chunks >= kWgmmaIdleSplitMinChunks &&
      double(wgmma_grid_ctas(shape, n)) < kWgmmaIdleSplitMaxSmFill * multiprocessors) {
    shape.splits = 2;  // kWgmmaIdleSplitMinChunks
  }
  return shape;
}

std::int64_t grid_ctas_along_n(const WgmmaShape& shape, std::int64_t n) {
  const std::int64_t rows = 64 * std::int64_t(shape.warpgroups);
  const std::int64_t row_blocks = (n + rows - 1) / rows;
  return (row_blocks + shape.multicast - 1) / shape.multicast * shape.multicast;
}

std::int64_t wgmma_grid_ctas(const WgmmaShape& shape, std::int64_t n) {
  return shape.stream_ctas > 0 ? shape.stream_ctas : grid_ctas_along_n(shape, n) * shape.splits;
}

StreamKPartition wgmma_stream_partition(const WgmmaShape& shape, std::int64_t n, std::int64_t k) {
  StreamKPartition partition;
  partition.row_blocks = grid_ctas_along_n(shape, n);
  partition.chunks = int(chunks_covering(k));
  partition.ctas = int(std::min<std::int64_t>(shape.stream_ctas, partition.units()));
  return partition;
}

namespace {

// FP4GEMM_WGMMA_SHAPE (wgmma_shape_override).
bool wgmma_split_shape_override(WgmmaShape& shape, const Overrides& overrides) {
  if (!overrides.wgmma_shape) return false;
  const char* text = overrides.wgmma_shape->c_str();
  int warpgroups = 0, splits = 0, multicast = 1;
  const int fields = std::sscanf(text, "%d:%d:%d", &warpgroups, &splits, &multicast);
  const auto power_of_two = [](int value) { return value >= 1 && std::has_single_bit(unsigned(value)); };
  if (fields < 2 || warpgroups < 1 || !power_of_two(splits) || !power_of_two(multicast) || splits * multicast > kMaxWgmmaCluster) {
    throw_invalid(std::string("FP4GEMM_WGMMA_SHAPE must look like 2:4 or 2:2:4 (warpgroups:splits[:multicast], splits and "
                              "multicast powers of two, a cluster of at most ") +
                  std::to_string(kMaxWgmmaCluster) + " CTAs), not '" + text + "'");
  }
  shape.warpgroups = warpgroups;
  shape.splits = splits;
  shape.multicast = multicast;
  shape.stream_ctas = 0;  // a clustered grid, unless FP4GEMM_WGMMA_STREAM asks for stream-K too
  return true;
}

}  // namespace

WgmmaShape wgmma_shape_to_run(std::int64_t m, std::int64_t n, std::int64_t k, int multiprocessors, bool& overridden,
                              const Overrides& overrides) {
  WgmmaShape shape = choose_wgmma_shape(m, n, k, multiprocessors);
  overridden = wgmma_shape_override(shape, overrides);
  if (overridden && shape.stream_ctas == 0 && !overrides.wgmma_shape) {
    shape = choose_data_parallel_wgmma_shape(m, n, k, multiprocessors);  // FP4GEMM_WGMMA_STREAM=0 alone
  }
  return shape;
}

bool wgmma_shape_override(WgmmaShape& shape, const Overrides& overrides) {
  const bool shaped = wgmma_split_shape_override(shape, overrides);
  if (overrides.wgmma_stream) {
    shape.stream_ctas = integer_knob("FP4GEMM_WGMMA_STREAM", *overrides.wgmma_stream, 0, 65535, "a CTA count (0: no stream-K grid)");
    if (shape.stream_ctas > 0) {
      if (shaped && (shape.splits != 1 || shape.multicast != 1)) {
        throw_invalid("FP4GEMM_WGMMA_STREAM needs FP4GEMM_WGMMA_SHAPE to have splits and multicast 1 (a stream-K grid is never "
                      "clustered), not '" + *overrides.wgmma_shape + "'");
      }
      shape.splits = shape.multicast = 1;
      if (!shaped) shape.warpgroups = kStreamKWarpgroups;  // else is_compiled_wgmma_shape judges the one asked for
    }
    return true;
  }
  return shaped;
}

}  // namespace fp4gemm::cuda_nvfp4
