#pragma once
// The measurement knobs of cuda_nvfp4, read from the environment once per plan into one struct:
// FP4GEMM_DECODE_KERNEL=mma|wgmma|prefill, FP4GEMM_DECODE_SHAPE, FP4GEMM_WGMMA_SHAPE,
// FP4GEMM_WGMMA_STREAM, FP4GEMM_PDL, FP4GEMM_PREFILL_SPLITS, FP4GEMM_WIDE_CTAS and FP4GEMM_WIDE_TOKENS. Each holds the variable's text; the
// selector parses a knob where it consults it, so a malformed value fails the plan with a sentence
// that names the knob and what it must be.
#include <optional>
#include <string>

namespace fp4gemm::cuda_nvfp4 {

struct Overrides {
  std::optional<std::string> decode_kernel;   // FP4GEMM_DECODE_KERNEL: mma, wgmma or prefill
  std::optional<std::string> decode_shape;    // FP4GEMM_DECODE_SHAPE: warps_n:warps_k[:tiles_per_warp[:bounded[:cluster_k]]]
  std::optional<std::string> wgmma_shape;     // FP4GEMM_WGMMA_SHAPE: warpgroups:splits[:multicast]
  std::optional<std::string> wgmma_stream;    // FP4GEMM_WGMMA_STREAM: stream-K CTAs (0: none)
  std::optional<std::string> pdl;             // FP4GEMM_PDL: 0 or 1
  std::optional<std::string> prefill_splits;  // FP4GEMM_PREFILL_SPLITS: 1 to kPrefillMaxKSplits
  std::optional<std::string> wide_ctas;       // FP4GEMM_WIDE_CTAS: the wide prefill kernel's persistent grid
  std::optional<std::string> wide_tokens;     // FP4GEMM_WIDE_TOKENS: its CTA width, 128 or 256

  // The knobs set in this process's environment (unset and empty variables are absent).
  static Overrides from_environment();
};

// A knob's value `text` as a whole decimal integer in [low, high]; throws naming the knob and
// `what` it must be otherwise.
int integer_knob(const char* name, const std::string& text, long low, long high, const char* what);

}  // namespace fp4gemm::cuda_nvfp4
