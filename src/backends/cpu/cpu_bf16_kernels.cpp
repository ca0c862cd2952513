#include "backends/cpu/cpu_bf16_kernels.hpp"

#include <immintrin.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "backends/cpu/cpu_tuning.hpp"
#include "fp4gemm/format/e2m1.hpp"
#include "fp4gemm/format/e4m3.hpp"

#if defined(__x86_64__) && defined(__GNUC__)
#define FP4GEMM_BF16_TARGET __attribute__((target("avx512f,avx512bw,avx512bf16")))
#define FP4GEMM_HAS_BF16_KERNEL 1
#else
#define FP4GEMM_HAS_BF16_KERNEL 0
#endif

namespace fp4gemm::cpu_kernels {

#if FP4GEMM_HAS_BF16_KERNEL
namespace {

// One layout tile (4 weight rows) x kRows activation rows, full K.
// The E2M1 table as BF16, twice: vpermw reads 5 index bits and the low-nibble index carries the
// high nibble's bit 0 in bit 4, so entries 16-31 repeat 0-15 instead of masking it away.
struct Bf16Table {
  alignas(64) std::uint16_t bits[32];
  Bf16Table() {
    for (int i = 0; i < 32; ++i) {
      const float value = e2m1::decode(std::uint8_t(i & 15));
      std::uint32_t word;
      std::memcpy(&word, &value, 4);
      bits[i] = std::uint16_t(word >> 16);  // exact: at most 2 significant bits
    }
  }
};
const Bf16Table kE2m1Bf16;

template <int kRows>
FP4GEMM_BF16_TARGET void tile_bf16(const CpuWeight& weight, std::int64_t tile, const std::uint16_t* activations,
                                   std::int64_t activation_stride, float* accumulators, std::int64_t accumulator_stride) {
  const __m512i table = _mm512_load_si512(kE2m1Bf16.bits);
  const float* scale_table = e4m3::decode_table();
  constexpr int kWeightRows = int(kCpuTileRows);
  __m512 sums[kRows][kWeightRows];
  for (int m = 0; m < kRows; ++m)
    for (int r = 0; r < kWeightRows; ++r) sums[m][r] = _mm512_setzero_ps();

  for (std::int64_t group = 0; group < weight.groups; ++group) {
    const std::uint8_t* codes = weight.group_data(tile, group);
    const std::uint8_t* scales = codes + kCpuGroupCodeBytes;
    __m512i low_activations[kRows], high_activations[kRows];
    for (int m = 0; m < kRows; ++m) {
      const std::uint16_t* a = activations + m * activation_stride + group * kCpuGroupK;
      low_activations[m] = _mm512_loadu_si512(a);        // k = 0..31: blocks 0, 1
      high_activations[m] = _mm512_loadu_si512(a + 32);  // k = 32..63: blocks 2, 3
    }
    for (int r = 0; r < kWeightRows; ++r) {
      const __m512i words = _mm512_cvtepu8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(codes + 32 * r)));
      const __m512i low = _mm512_permutexvar_epi16(words, table);
      const __m512i high = _mm512_permutexvar_epi16(_mm512_srli_epi16(words, 4), table);
      const std::uint8_t* row_scales = scales + 4 * r;
      // Lanes 0-7 of a vdpbf16ps result hold the first block's pair sums, lanes 8-15 the second's.
      const __m512 low_scales = _mm512_mask_blend_ps(0xFF00, _mm512_set1_ps(scale_table[row_scales[0]]),
                                                     _mm512_set1_ps(scale_table[row_scales[1]]));
      const __m512 high_scales = _mm512_mask_blend_ps(0xFF00, _mm512_set1_ps(scale_table[row_scales[2]]),
                                                      _mm512_set1_ps(scale_table[row_scales[3]]));
      for (int m = 0; m < kRows; ++m) {
        const __m512 low_dot = _mm512_dpbf16_ps(_mm512_setzero_ps(), (__m512bh)low, (__m512bh)low_activations[m]);
        const __m512 high_dot = _mm512_dpbf16_ps(_mm512_setzero_ps(), (__m512bh)high, (__m512bh)high_activations[m]);
        sums[m][r] = _mm512_fmadd_ps(low_dot, low_scales, sums[m][r]);
        sums[m][r] = _mm512_fmadd_ps(high_dot, high_scales, sums[m][r]);
      }
    }
  }
  // NOTE: a plain lane sum, not _mm512_reduce_add_ps, whose GCC 12 definition reads an undefined
  // vector and warns; this runs once per tile row, outside the K loop.
  for (int m = 0; m < kRows; ++m) {
    for (int r = 0; r < kWeightRows; ++r) {
      alignas(64) float lanes[16];
      _mm512_store_ps(lanes, sums[m][r]);
      float total = 0.0f;
      for (float lane : lanes) total += lane;
      accumulators[m * accumulator_stride + tile * kCpuTileRows + r] = total;
    }
  }
}

}  // namespace

bool bf16_kernel_available() {
  static const bool supported = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                                __builtin_cpu_supports("avx512bf16");
  // Read per call (cheap next to a GEMM) so tests and users can switch it off at any time.
  const char* disabled = std::getenv("FP4GEMM_CPU_NO_BF16");
  return supported && (disabled == nullptr || *disabled == '\0' || *disabled == '0');
}

void fused_small_m_bf16(const CpuWeight& weight, const std::uint16_t* activations, std::int64_t rows,
                        std::int64_t tile_begin, std::int64_t tile_end, float* accumulators) {
  constexpr int kTile = cpu_tuning::kFusedActivationRowsPerTile;
  static_assert(kTile == 4, "the switch below unrolls tiles of up to 4 activation rows");
  const std::int64_t stride = weight.padded_k(), out_stride = weight.padded_rows();
  for (std::int64_t tile = tile_begin; tile < tile_end; ++tile) {
    for (std::int64_t m = 0; m < rows; m += kTile) {
      const std::uint16_t* a = activations + m * stride;
      float* out = accumulators + m * out_stride;
      switch (std::min<std::int64_t>(kTile, rows - m)) {
        case 1: tile_bf16<1>(weight, tile, a, stride, out, out_stride); break;
        case 2: tile_bf16<2>(weight, tile, a, stride, out, out_stride); break;
        case 3: tile_bf16<3>(weight, tile, a, stride, out, out_stride); break;
        default: tile_bf16<4>(weight, tile, a, stride, out, out_stride); break;
      }
    }
  }
}

#else

bool bf16_kernel_available() { return false; }

void fused_small_m_bf16(const CpuWeight&, const std::uint16_t*, std::int64_t, std::int64_t, std::int64_t, float*) {}

#endif

}  // namespace fp4gemm::cpu_kernels
