#pragma once
// Tuned constants and the K-split rule of cuda_nvfp4's prefill kernel (sm90_nvfp4_prefill_gemm.cu).
#include <cstdint>

#include "backends/cuda_nvfp4/overrides.hpp"
#include "backends/cuda_nvfp4/selection_rules.hpp"

namespace fp4gemm::cuda_nvfp4 {

// The prefill kernel (sm90_nvfp4_prefill_gemm.cu, M > kMaxActivationRows on SM 9.0): CTAs of 128
// activation rows x 128 weight rows; kPrefillDecodeWarps warps, each taking whole chunks in turn,
// decode the weight records into BF16 in shared memory (kPrefillDecodedStages stages of 16 KiB),
// fed by a ring of kPrefillRecordStages bulk-copied records (4.5 KiB each; each warp copies into
// its own stages, kPrefillRecordStages / kPrefillDecodeWarps rounds ahead). H200
// four and then eight decode warps all working
// on every chunk took the same ~0.7 us a chunk; whole chunks per warp 7-19% less; 12 record and 8
// decoded stages with the lock-step warps changed nothing;: each
// warp copying its own records 1-4% faster than one lane copying for all. Not tuned further.
inline constexpr int kPrefillCtaTokens = 128;  // two consumer warpgroups of 64
inline constexpr int kPrefillCtaRows = 128;    // one weight record (weight_layout.hpp)
inline constexpr int kPrefillDecodeWarps = 8;
inline constexpr int kPrefillRecordStages = 16;
inline constexpr int kPrefillDecodedStages = 8;

// Output tiles (kPrefillCtaTokens x kPrefillCtaRows) of an M x N problem: the prefill grid's CTAs
// before any K split.
constexpr std::int64_t prefill_tiles(std::int64_t m, std::int64_t n) {
  return (m + kPrefillCtaTokens - 1) / kPrefillCtaTokens * ((n + kPrefillCtaRows - 1) / kPrefillCtaRows);
}

// The prefill kernel's K split: with one CTA per SM, a grid of tiles (128 x 128 output blocks)
// that is a fraction of a wave leaves SMs idle (4096^2 at M = 65-128: 32 tiles on 132 SMs). Each
// tile's chunks are then split `splits` ways; each CTA writes its FP32 partial tile to a workspace
// and the tile's last CTA adds them all in split order (deterministic) before the epilogue.
// prefill_k_splits picks the split with the lowest cost ceil(tiles * splits / SMs) * (ceil(chunks /
// splits) + kPrefillCtaOverheadChunks), taking more splits only when that is below
// kPrefillSplitMinGain of the best so far, up to kPrefillMaxKSplits and at least
// kPrefillMinChunksPerSplit chunks per CTA. The overhead term stands for what a split CTA costs
// beyond its chunks: the pipeline fill (~2.8 us) and the partial's hand-off (~2.8 us to write it,
// then the last CTA's reads), ~16 chunk-times at the ~0.47 us a chunk the kernel runs
//. H200, each split forced on the four issue
// weights at M = 65-256: a split that adds rounds of CTAs was slower everywhere
// (12288x4096 M = 65: 4 ways, 3 rounds of 16 chunks, 44.4 us against 34.3 unsplit; 28672x8192
// 2-8 ways 17-60% slower), which the chunk rounds alone (48 against 64) did not predict; the
// term picks the measured best split on all twelve rows (e.g. 4096x12288 M = 65: 4 ways, 89.9 ->
// 33.1 us; 4096^2 M = 256: 2 ways, 33.8 -> 24.3).
inline constexpr int kPrefillMaxKSplits = int(selection_rule("kPrefillMaxKSplits"));
inline constexpr int kPrefillMinChunksPerSplit = int(selection_rule("kPrefillMinChunksPerSplit"));
inline constexpr int kPrefillCtaOverheadChunks = int(selection_rule("kPrefillCtaOverheadChunks"));
inline constexpr double kPrefillSplitMinGain = double(selection_rule("kPrefillSplitMinGain"));

// The K split of the prefill kernel for an M x N problem of `chunks` chunks on `multiprocessors`
// SMs (1 when unknown). FP4GEMM_PREFILL_SPLITS=1..kPrefillMaxKSplits overrides it for measurements
// (clamped to the chunks); `overridden` says whether it did.
int prefill_k_splits(std::int64_t m, std::int64_t n, std::int64_t chunks, int multiprocessors, bool* overridden = nullptr,
                     const Overrides& overrides = Overrides::from_environment());

}  // namespace fp4gemm::cuda_nvfp4
