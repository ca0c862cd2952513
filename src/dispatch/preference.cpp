// The `auto` preference table: one row per architecture family, best backend first.
#include "fp4gemm/dispatch/preference.hpp"

#include <stdexcept>

namespace fp4gemm::dispatch {

const char* to_string(ArchFamily family) {
  switch (family) {
    case ArchFamily::sm12x: return "SM 12.x";
    case ArchFamily::sm10x: return "SM 10.x";
    case ArchFamily::sm90: return "SM 9.0";
    case ArchFamily::sm8x: return "SM 8.x";
    case ArchFamily::other_gpu: return "other GPU";
    case ArchFamily::no_gpu: return "no GPU";
  }
  return "?";
}

ArchFamily family_of(const DeviceInfo& gpu) {
  if (!gpu.is_cuda()) return ArchFamily::no_gpu;
  if (gpu.sm_major == 12) return ArchFamily::sm12x;
  if (gpu.sm_major == 10) return ArchFamily::sm10x;
  if (gpu.sm_major == 9 && gpu.sm_minor == 0) return ArchFamily::sm90;
  if (gpu.sm_major == 8) return ArchFamily::sm8x;
  return ArchFamily::other_gpu;
}

// NOTE: the one place the `auto` order lives. Host backends close every GPU row: they are the
// fallback of last resort (operands in GPU memory are staged through the host), `ref` last
// because it is the slow FP64 oracle.
const std::vector<PreferenceRow>& preference_table() {
  static const std::vector<PreferenceRow> table = {
      {ArchFamily::sm12x,
       {"cublaslt", "cuda_decode", "cuda_dequant_cublas", "cpu", "ref"},
       "unmeasured here (no Blackwell GPU): native block-scaled FP4 tensor cores (cuBLASLt) first for W4A4, "
       "as on SM 10.x; W4A16 falls through to the BF16 paths"},
      {ArchFamily::sm10x,
       {"cublaslt", "cuda_decode", "cuda_dequant_cublas", "cpu", "ref"},
       "unmeasured here (no Blackwell GPU): tcgen05 FP4 MMA has 2-4x the BF16 rate and reads 0.5625 B per "
       "weight, so native NVFP4 first; W4A16 needs the BF16 paths"},
      // NOTE: the crossover is measured: bench/results/2026-11-30-h200-decode-v7.md, -s5.md, -s7.md.
      {ArchFamily::sm90,
       {"cuda_decode", "cuda_dequant_cublas", "cpu", "ref"},
       "fp4gemm bench on one H200 (2026-11-30, session 7): cuda_decode beats cuda_dequant_cublas up to "
       "M = 32 (12288x4096: M=1 8.5 vs 26.7 us, M=16 10.6 vs 27.2, M=32 19.4 vs 27.8; 28672x8192: M=1 32.9 "
       "vs 105.3, M=16 44.4 vs 107.2, M=32 76.5 vs 108.3); cuBLASLt has no NVFP4 on sm_90",
       32},
      // NOTE: N >= 28672 is where the win was measured; at 16384x4096 cuda_decode lost by 1-6%
      // (bench/results/2026-11-30-h200-s4.md). In between (K = 8192, bench/results/2026-11-30-h200-s5.md):
      // 24576 is a tie (within 3%), 20480 a loss (7-8%), so the bound stays at 28672. The wgmma
      // kernel's time is flat in N there (91-95 us), dequantize + cuBLAS grows with it.
      {ArchFamily::sm90,
       {"cuda_decode", "cuda_dequant_cublas", "cpu", "ref"},
       "fp4gemm bench on one H200 (2026-11-30): for the tallest weights cuda_decode's wgmma kernel beats "
       "dequantize + cuBLAS BF16 up to M = 64 (28672x8192: M=33 90.9 vs 111.7 us, M=48 93.0 vs 117.6, "
       "M=64 94.9 vs 118.4); at 24576x8192 they tie (M=64 94.8 vs 95.2), at 20480x8192 and 16384x4096 it "
       "loses (M=33 91.4 vs 85.1; M=48 36.7 vs 34.9)",
       64, 28672},
      {ArchFamily::sm90,
       {"cuda_dequant_cublas", "cuda_decode", "cpu", "ref"},
       "fp4gemm bench on one H200 (2026-11-30): from M = 33 dequantize + cuBLAS BF16 wins on every measured "
       "shape with N < 28672, even against cuda_decode's wgmma kernel (M=64: 12288x4096 28.2 vs 36.9 us, "
       "16384x4096 35.3 vs 37.6, 4096x4096 11.4 vs 21.3, 4096x12288 32.3 vs 42.2)"},
      {ArchFamily::sm8x,
       {"cuda_decode", "cuda_dequant_cublas", "cpu", "ref"},
       "unmeasured: same reasoning as SM 9.0 (small M is weight-bandwidth bound, large M is BF16-compute bound)"},
      {ArchFamily::other_gpu,
       {"cuda_dequant_cublas", "cpu", "ref"},
       "unmeasured: only the generic dequantize + cuBLAS path is expected to run"},
      {ArchFamily::no_gpu, {"cpu", "ref"}, "the SIMD backend is orders of magnitude faster than the FP64 oracle"},
  };
  return table;
}

const PreferenceRow& preference_for(ArchFamily family, std::int64_t m, std::int64_t n) {
  for (const auto& row : preference_table())
    if (row.family == family && m <= row.max_m && n >= row.min_n) return row;
  throw std::logic_error("preference table has no row for a family");
}

}  // namespace fp4gemm::dispatch
