#include "backends/cuda_nvfp4/kernel_switch.hpp"

#include <string>

#include "backends/cuda_nvfp4/weight_layout.hpp"
#include "fp4gemm/error.hpp"

namespace fp4gemm::cuda_nvfp4 {
namespace {

// Whether those pairs run ahead of the wgmma kernel the rules picked (sm80_nvfp4_mma_tuning.hpp, above
// kPairsAheadOfWgmmaMaxChunksPerWarp).
bool tile_pairs_ahead_of_wgmma(std::int64_t m, std::int64_t n, std::int64_t k, int multiprocessors,
                               const ResidentCtasPerSm& resident_ctas_per_sm) {
  const auto pairs = many_tile_pairs_in_one_wave(m, n, multiprocessors, resident_ctas_per_sm);
  if (!pairs || (chunks_covering(k) + pairs->warps_k - 1) / pairs->warps_k > kPairsAheadOfWgmmaMaxChunksPerWarp) return false;
  const WgmmaShape wgmma = choose_wgmma_shape(m, n, k, multiprocessors);
  if (wgmma.stream_ctas > 0) {
    return resident_warps_per_sm(*pairs, n, multiprocessors, resident_ctas_per_sm) >= kMinPairsAheadOfStreamKWarpsPerSm;
  }
  return wgmma.splits > 1;
}

}  // namespace

const char* decode_kernel_name(DecodeKernel kernel) {
  switch (kernel) {
    case DecodeKernel::mma: return "mma.sync";
    case DecodeKernel::wgmma: return "wgmma";
    case DecodeKernel::prefill: return "prefill";
    case DecodeKernel::wide: return "wide prefill";
  }
  return "?";
}

bool wgmma_grid_fills_sms(std::int64_t m, std::int64_t n, std::int64_t k, int multiprocessors) {
  if (multiprocessors <= 0) return false;
  const WgmmaShape shape = choose_data_parallel_wgmma_shape(m, n, k, multiprocessors);
  return shape.warpgroups == 2 && double(wgmma_grid_ctas(shape, n)) >= kWgmmaMinSmFill * multiprocessors;
}

bool wgmma_rule_holds(std::int64_t m, std::int64_t n, std::int64_t k, int multiprocessors) {
  const bool large = m >= kWgmmaMinM && (n >= kWgmmaMinN || n * k >= kWgmmaMinElements);
  const bool filled = in_wgmma_filled_band(m, k) && wgmma_grid_fills_sms(m, n, k, multiprocessors);
  const bool tall = m >= kWgmmaTallMinM && m < kWgmmaFilledMinM &&
                    ((n >= kWgmmaTallMinN && k >= kWgmmaTallMinK) || (n >= kWgmmaTallStreamMinN && k >= kWgmmaTallStreamMinK));
  // Measured with the stream-K grid, which needs the SM count (wgmma_shape_to_run).
  const bool mid_stream = in_wgmma_filled_band(m, k) && multiprocessors > 0 && n >= kWgmmaMidStreamMinN && k >= kWgmmaMidStreamMinK;
  return large || filled || tall || mid_stream;
}

DecodeKernel choose_decode_kernel(std::int64_t m, std::int64_t n, std::int64_t k, int sm, int multiprocessors,
                                  const ResidentCtasPerSm& resident_ctas_per_sm, const Overrides& overrides) {
  if (sm != 90) return DecodeKernel::mma;  // wgmma is SM 9.0 only (sm_90a)
  if (overrides.decode_kernel) {
    const std::string& kernel = *overrides.decode_kernel;
    if (kernel == "prefill") return DecodeKernel::prefill;
    if (kernel == "wide") return DecodeKernel::wide;
    if (kernel != "wgmma" && kernel != "mma") {
      throw_invalid("FP4GEMM_DECODE_KERNEL must be 'mma', 'wgmma', 'prefill' or 'wide', not '" + kernel + "'");
    }
  }
  if (m > kMaxActivationRows) return wide_rule_holds(m, n, multiprocessors) ? DecodeKernel::wide : DecodeKernel::prefill;
  if (overrides.decode_kernel) return *overrides.decode_kernel == "wgmma" ? DecodeKernel::wgmma : DecodeKernel::mma;
  if (!wgmma_rule_holds(m, n, k, multiprocessors)) return DecodeKernel::mma;
  return tile_pairs_ahead_of_wgmma(m, n, k, multiprocessors, resident_ctas_per_sm) ? DecodeKernel::mma : DecodeKernel::wgmma;
}

}  // namespace fp4gemm::cuda_nvfp4
