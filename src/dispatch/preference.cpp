// The `auto` preference table: one row per architecture family, best backend first.
#include "dispatch/preference.hpp"

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
       {"cublaslt", "cuda_nvfp4", "cuda_dequant_cublas", "cpu", "ref"},
       "unmeasured here (no Blackwell GPU): native block-scaled FP4 tensor cores (cuBLASLt) first for W4A4, "
       "as on SM 10.x; W4A16 falls through to the BF16 paths"},
      {ArchFamily::sm10x,
       {"cublaslt", "cuda_nvfp4", "cuda_dequant_cublas", "cpu", "ref"},
       "unmeasured here (no Blackwell GPU): tcgen05 FP4 MMA has 2-4x the BF16 rate and reads 0.5625 B per "
       "weight, so native NVFP4 first; W4A16 needs the BF16 paths"},
      // NOTE: every SM 9.0 row below is measured (fp4gemm bench on one H200, bench/results/h200.md and
      // h200-prefill.md) with cuda_dequant_cublas dequantizing per call, except where a row says
      // its figures were taken against a resident BF16 copy (per-call dequantization only adds
      // N x K x 2.56 B of traffic to those: re-measure them).
      {ArchFamily::sm90,
       {"cuda_nvfp4", "cuda_dequant_cublas", "cpu", "ref"},
       "fp4gemm bench on one H200: cuda_nvfp4 beats cuda_dequant_cublas at every M <= 32 "
       "(12288x4096: M=1 8.5 vs 69.9 us, M=16 10.4 vs 68.4, M=32 19.4 vs 71.2; 28672x8192: M=1 33.3 vs 333.7, "
       "M=32 56.0 vs 335.9; 4096x4096 M=32 7.0 vs 25.2); cuBLASLt has no NVFP4 on sm_90",
       32},
      {ArchFamily::sm90,
       {"cuda_nvfp4", "cuda_dequant_cublas", "cpu", "ref"},
       "fp4gemm bench on one H200: from 4096 rows and K >= 4096 cuda_nvfp4 (its wgmma kernel to M = 64, "
       "its prefill kernel above) beats dequantize + cuBLAS up to M = 256 (M=64: 4096x4096 13.4 vs 23.5 us, "
       "12288x4096 21.8 vs 70.2, 4096x12288 23.9 vs 77.5, 28672x8192 76.1 vs 343.3; M=256: 4096x4096 24.1 vs "
       "28.4, 12288x4096 65.6 vs 81.8, 4096x12288 54.7 vs 93.7, 28672x8192 269.5 vs 424.6)",
       256, 4096, 4096},
      {ArchFamily::sm90,
       {"cuda_nvfp4", "cuda_dequant_cublas", "cpu", "ref"},
       "fp4gemm bench on one H100, same run: from 4096 rows and K >= 4096 cuda_nvfp4 (its wide prefill kernel, "
       "or its prefill kernel where the wide one's tiles fill few SMs) beats dequantize + cuBLAS up to M = 1024 "
       "(M=512: 4096x4096 34.3 vs 39.2 us, 12288x4096 100.1 vs 119.2, 4096x12288 104.9 vs 133.0, 28672x8192 391.7 "
       "vs 554.4; M=1024: 4096x4096 52.9 vs 62.6, 12288x4096 161.6 vs 185.9, 4096x12288 160.4 vs 190.5, "
       "28672x8192 701.6 vs 849.0); bench/results/h100-prefill.md",
       1024, 4096, 4096},
      {ArchFamily::sm90,
       {"cuda_nvfp4", "cuda_dequant_cublas", "cpu", "ref"},
       "fp4gemm bench on one H100, same run: from 12288 rows and K >= 4096 the wide prefill kernel beats "
       "dequantize + cuBLAS up to M = 2048 (12288x4096 322.0 vs 344.5 us, 28672x8192 1410.9 vs 1545.5); "
       "at M = 4096 dequantize + cuBLAS leads by 1-7 % (28672x8192 2890.9 vs 2906.0, 12288x4096 648.6 vs 664.5)",
       2048, 12288, 4096},
      {ArchFamily::sm90,
       {"cuda_nvfp4", "cuda_dequant_cublas", "cpu", "ref"},
       "fp4gemm bench on one H200, against a resident BF16 copy: for K >= 1024 from 16384 rows cuda_nvfp4's "
       "wgmma kernel beats dequantize + cuBLAS BF16 up to M = 64 (M=33/64: 16384x1024 9.5/9.9 vs 10.8/11.1 us, "
       "16384x2048 14.2/14.7 vs 19.2/19.5)",
       64, 16384, 1024},
      {ArchFamily::sm90,
       {"cuda_dequant_cublas", "cuda_nvfp4", "cpu", "ref"},
       "fp4gemm bench on one H200: above M = 32 on weights below 4096 rows or K, dequantize + cuBLAS BF16 "
       "beats or ties cuda_nvfp4 (M=256: 4096x1024 10.2 vs 13.3 us, 2048x4096 17.8 vs 18.0; against a resident "
       "BF16 copy, M=33/64: 2048x4096 9.8/9.9 vs 19.2/19.4, 8192x2048 10.9/11.1 vs 11.2/11.4); on one H100, same "
       "run, above the cuda_nvfp4 rows on all weights (M=4096: 28672x8192 2890.9 vs 2906.0 us, 4096x4096 208.8 "
       "vs 230.6; M=2048: 4096x4096 110.2 vs 114.1; 2048x4096 at every M: M=1024 30.6 vs 35.5)"},
      {ArchFamily::sm8x,
       {"cuda_nvfp4", "cuda_dequant_cublas", "cpu", "ref"},
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
