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
      // NOTE: from M = 33 the two rows below are where cuda_decode (its wgmma kernel) beat
      // dequantize + cuBLAS BF16 in one run (bench/results/2026-12-01-h200-s14.md, call 7): every
      // measured weight of N >= 14336 with K >= 4096, and of N >= 4096 with K >= 8192. It lost on
      // K = 4096 below 14336 rows (12288x4096 M = 64 29.8 vs 28.3 us, 6144x4096 21.2 vs 16.2,
      // 4096x4096 17.0 vs 11.4), which keep the last row.
      {ArchFamily::sm90,
       {"cuda_decode", "cuda_dequant_cublas", "cpu", "ref"},
       "fp4gemm bench on one H200 (2026-12-01, session 14): for tall weights cuda_decode's wgmma kernel beats "
       "dequantize + cuBLAS BF16 up to M = 64 (M=33/64: 14336x4096 28.2/29.8 vs 31.9/33.9 us, 16384x4096 "
       "28.3/30.2 vs 35.3/36.0, 20480x8192 74.8/77.3 vs 87.1/85.6, 24576x8192 75.0/78.1 vs 97.2/99.2, "
       "28672x8192 M=64 81.0 vs 118.2)",
       64, 14336, 4096},
      {ArchFamily::sm90,
       {"cuda_decode", "cuda_dequant_cublas", "cpu", "ref"},
       "fp4gemm bench on one H200 (2026-12-01, session 14): for K >= 8192 cuda_decode's wgmma kernel beats "
       "dequantize + cuBLAS BF16 up to M = 64 (M=33/64: 4096x8192 21.2/23.8 vs 22.7/24.8 us, 8192x8192 "
       "33.5/35.0 vs 34.9/36.9, 8192x28672 101.8/104.7 vs 121.8/124.3; 4096x12288 M=64 30.8 vs 32.2)",
       64, 4096, 8192},
      {ArchFamily::sm90,
       {"cuda_dequant_cublas", "cuda_decode", "cpu", "ref"},
       "fp4gemm bench on one H200 (2026-12-01, session 14): from M = 33 dequantize + cuBLAS BF16 beats "
       "cuda_decode on the measured weights the rows above do not take, K = 4096 below 14336 rows (M=64: "
       "12288x4096 28.3 vs 29.8 us, 6144x4096 16.2 vs 21.2, 4096x4096 11.4 vs 17.0); others here are unmeasured"},
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

const PreferenceRow& preference_for(ArchFamily family, std::int64_t m, std::int64_t n, std::int64_t k) {
  for (const auto& row : preference_table())
    if (row.family == family && m <= row.max_m && n >= row.min_n && k >= row.min_k) return row;
  throw std::logic_error("preference table has no row for a family");
}

}  // namespace fp4gemm::dispatch
