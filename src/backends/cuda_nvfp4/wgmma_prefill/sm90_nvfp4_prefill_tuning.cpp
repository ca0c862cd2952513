#include "backends/cuda_nvfp4/wgmma_prefill/sm90_nvfp4_prefill_tuning.hpp"

#include <algorithm>

#include "backends/cuda_nvfp4/overrides.hpp"

namespace fp4gemm::cuda_nvfp4 {

int prefill_k_splits(std::int64_t m, std::int64_t n, std::int64_t chunks, int multiprocessors, bool* overridden,
                     const Overrides& overrides) {
  if (overridden != nullptr) *overridden = false;
  if (overrides.prefill_splits) {
    const int splits = integer_knob("FP4GEMM_PREFILL_SPLITS", *overrides.prefill_splits, 1, kPrefillMaxKSplits, "a split count");
    if (overridden != nullptr) *overridden = true;
    return int(std::clamp<std::int64_t>(splits, 1, std::max<std::int64_t>(chunks, 1)));
  }
  if (multiprocessors <= 0 || chunks <= 0) return 1;
  const std::int64_t tiles = prefill_tiles(m, n);
  const auto cost = [&](int splits) {
    return (tiles * splits + multiprocessors - 1) / multiprocessors * ((chunks + splits - 1) / splits + kPrefillCtaOverheadChunks);
  };
  int best = 1;
  for (int splits = 2; splits <= kPrefillMaxKSplits && chunks / splits >= kPrefillMinChunksPerSplit; ++splits) {
    if (double(cost(splits)) < kPrefillSplitMinGain * double(cost(best))) best = splits;
  }
  return best;
}

}  // namespace fp4gemm::cuda_nvfp4
