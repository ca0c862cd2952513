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
      // NOTE: the crossover is measured (fp4gemm bench on one H200; the evidence below).
      {ArchFamily::sm90,
       {"cuda_nvfp4", "cuda_dequant_cublas", "cpu", "ref"},
       "fp4gemm bench on one H200: cuda_nvfp4 beats cuda_dequant_cublas up to "
       "M = 32 (12288x4096: M=1 8.5 vs 26.7 us, M=16 10.6 vs 27.2, M=32 19.4 vs 27.8; 28672x8192: M=1 32.9 "
       "vs 105.3, M=16 44.4 vs 107.2, M=32 76.5 vs 108.3); cuBLASLt has no NVFP4 on sm_90",
       32},
      // NOTE: from M = 33 the three rows below are where cuda_nvfp4 (its wgmma kernel, with the
      // epilogue that stores from registers) beat dequantize + cuBLAS BF16 in one run
      // K >= 4096 from 6144 rows,
      // K >= 1024 from 16384 rows, K >= 8192 from 4096 rows. Dequantize + cuBLAS won or tied
      // on the other measured weights, which keep the last row (4096x4096 too: cuda_nvfp4 wins
      // there at M = 33 and 48 but loses at 64).
      {ArchFamily::sm90,
       {"cuda_nvfp4", "cuda_dequant_cublas", "cpu", "ref"},
       "fp4gemm bench on one H200: for K >= 4096 from 6144 rows cuda_nvfp4's wgmma "
       "kernel beats dequantize + cuBLAS BF16 up to M = 64 (M=33/64: 6144x4096 15.6/15.7 vs 16.3/16.2 "
       "us, 7168x4096 15.7/16.0 vs 17.9/17.9, 8192x4096 15.9/16.1 vs 19.7/20.2, 6144x6144 20.4/20.6 vs 22.5/21.8; 10240x4096 23.2/23.7 vs 23.8/23.2, 12288x4096 "
       "23.3/23.8 vs 29.1/28.7; before a 3-5 us epilogue saving: 16384x4096 28.3/30.2 vs 35.3/36.0)",
       64, 6144, 4096},
      {ArchFamily::sm90,
       {"cuda_nvfp4", "cuda_dequant_cublas", "cpu", "ref"},
       "fp4gemm bench on one H200: for K >= 1024 from 16384 rows cuda_nvfp4's wgmma "
       "kernel beats dequantize + cuBLAS BF16 up to M = 64 (M=33/64: 16384x1024 9.5/9.9 vs 10.8/11.1 us, "
       "16384x2048 14.2/14.7 vs 19.2/19.5)",
       64, 16384, 1024},
      {ArchFamily::sm90,
       {"cuda_nvfp4", "cuda_dequant_cublas", "cpu", "ref"},
       "fp4gemm bench on one H200: for K >= 8192 cuda_nvfp4's wgmma kernel beats "
       "dequantize + cuBLAS BF16 up to M = 64 (M=33/64: 4096x8192 20.2/20.5 vs 22.5/24.1 us; before "
       "a 3-5 us epilogue saving: 8192x8192 33.5/35.0 vs 34.9/36.9, 8192x28672 101.8/104.7 vs 121.8/124.3)",
       64, 4096, 8192},
      {ArchFamily::sm90,
       {"cuda_dequant_cublas", "cuda_nvfp4", "cpu", "ref"},
       "fp4gemm bench on one H200 (cuda_dequant_cublas then kept a BF16 copy; per-call dequantization now adds "
       "N x K x 2.56 B of traffic: re-measure): from M = 33 dequantize + cuBLAS BF16 beats or ties "
       "cuda_nvfp4 on the measured weights the rows above do not take (M=33/64: 5120x4096 13.8/13.9 vs "
       "15.5/15.8 us, 8192x2048 10.9/11.1 vs 11.2/11.4, 2048x4096 9.8/9.9 vs 19.2/19.4), except 4096x4096 "
       "below M = 64 (M=33/64 14.2/11.6 vs 13.3/13.6); others here are unmeasured",
       64},
      // NOTE: an estimate, not a measurement: the crossover below was measured when
      // cuda_dequant_cublas kept a BF16 copy of the weight. It now dequantizes per call, which adds
      // N x K x 2.56 bytes of traffic (read NVFP4, write BF16: 28672x8192 ~140 us, 12288x4096 ~30,
      // 4096x4096 ~10 at the H200's ~4.3 TB/s) to the cuBLAS time. Added to the measured cuBLAS
      // times, the prefill kernel wins up to M = 256 on the issue weights and loses from M = 1024.
      // (M <= 64 keeps the rows above, measured when the BF16 copy existed.)
      // Re-measure with the per-call path and replace this row.
      {ArchFamily::sm90,
       {"cuda_nvfp4", "cuda_dequant_cublas", "cpu", "ref"},
       "estimated, not yet measured with per-call dequantization: M = 65-256 cuda_nvfp4's prefill kernel "
       "against cuBLAS BF16 + the per-call dequantization (N x K x 2.56 B at ~4.3 TB/s); M = 256 on one H200: "
       "28672x8192 259.8 us vs 197.7 + ~140, 12288x4096 65.7 vs 36.5 + ~30, 4096x4096 24.2 vs 16.8 + ~10",
       256},
      {ArchFamily::sm90,
       {"cuda_dequant_cublas", "cuda_nvfp4", "cpu", "ref"},
       "fp4gemm bench on one H200: above M = 256 cuBLAS BF16 beats cuda_nvfp4's prefill kernel by more than the "
       "per-call dequantization costs (M = 1024: 28672x8192 677 + ~140 vs 932 us, 12288x4096 148 + ~30 vs 207, "
       "4096x4096 43.6 + ~10 vs 69.4)"},
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
