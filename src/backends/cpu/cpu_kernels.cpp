// Highway kernels of the `cpu` backend, compiled once per SIMD target and dispatched at run time.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backends/cpu/cpu_kernels.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "backends/cpu/cpu_kernels.hpp"
#include "backends/cpu/cpu_tuning.hpp"
#include "fp4gemm/format/e2m1.hpp"
#include "fp4gemm/format/e4m3.hpp"

HWY_BEFORE_NAMESPACE();
namespace fp4gemm {
namespace cpu_kernels {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

constexpr int kBlock = 16;

// Low nibble of each 32-bit lane as a table index. NOTE: vpermps (AVX-512 TableLookupLanes) reads
// only the low 4 index bits, so the mask is dropped there; Highway's debug builds (sanitizers
// included) check the index range, so they keep it.
template <class DU>
HWY_INLINE hn::Vec<DU> LowNibble(DU du, hn::Vec<DU> raw) {
#if HWY_TARGET <= HWY_AVX3 && !HWY_IS_DEBUG_BUILD
  (void)du;
  return raw;
#else
  return hn::And(raw, hn::Set(du, 15u));
#endif
}

#if HWY_TARGET <= HWY_AVX3
constexpr int kWeightRowsPerTile = cpu_tuning::kFusedWeightRowsPerTileWide;
constexpr std::int64_t kFusedMaxM = cpu_tuning::kFusedMaxMWide;
#else
constexpr int kWeightRowsPerTile = cpu_tuning::kFusedWeightRowsPerTileNarrow;
constexpr std::int64_t kFusedMaxM = cpu_tuning::kFusedMaxMNarrow;
#endif

// E2M1 codes (0..15 in 32-bit lanes) to FP32 values.
template <class DF>
HWY_INLINE hn::Vec<DF> DecodeE2M1(DF df, hn::Vec<hn::RebindToUnsigned<DF>> codes) {
  const hn::RebindToSigned<DF> di;
#if HWY_TARGET <= HWY_AVX3
  // 16 float lanes hold the whole E2M1 table: one permute (vpermps) per 16 elements.
  const auto table = hn::LoadU(df, e2m1::kValues);
  return hn::TableLookupLanes(table, hn::IndicesFromVec(df, hn::BitCast(di, codes)));
#elif HWY_TARGET == HWY_AVX2
  // 8 lanes hold the magnitudes; the sign bit (bit 3) moves to bit 31.
  const hn::RebindToUnsigned<DF> du;
  const auto table = hn::LoadU(df, e2m1::kValues);
  const auto magnitude = hn::TableLookupLanes(table, hn::IndicesFromVec(df, hn::BitCast(di, hn::And(codes, hn::Set(du, 7u)))));
  const auto sign = hn::ShiftLeft<28>(hn::And(codes, hn::Set(du, 8u)));
  return hn::Xor(magnitude, hn::BitCast(df, sign));
#else
  // Arithmetic decode: 4*|value| is 2m for exponent 0, else (2+m) << exponent.
  const hn::RebindToUnsigned<DF> du;
  const auto magnitude = hn::And(codes, hn::Set(du, 7u));
  const auto exponent = hn::ShiftRight<1>(magnitude);
  const auto mantissa = hn::And(magnitude, hn::Set(du, 1u));
  const auto normal = hn::Add(hn::Set(du, 2u), mantissa) << exponent;
  const auto quadruple = hn::IfThenElse(hn::Eq(exponent, hn::Zero(du)), hn::ShiftLeft<1>(mantissa), normal);
  const auto value = hn::Mul(hn::ConvertTo(df, hn::BitCast(di, quadruple)), hn::Set(df, 0.25f));
  const auto sign = hn::ShiftLeft<28>(hn::And(codes, hn::Set(du, 8u)));
  return hn::Xor(value, hn::BitCast(df, sign));
#endif
}

// One tile: kRows activation rows x kWeightRows weight rows (rows first_row.. of layout tile
// `tile`, cpu_layout.hpp), full K. Decoded weights are kept in registers and reused across the
// activation rows.
template <int kRows, int kWeightRows, class DF>
HWY_INLINE void FusedTile(DF df, const CpuWeight& weight, std::int64_t tile, int first_row, const float* activations,
                          std::int64_t activation_stride, float* accumulators, std::int64_t accumulator_stride) {
  using V = hn::Vec<DF>;
  const hn::RebindToUnsigned<DF> du;
  const hn::Rebind<std::uint8_t, DF> d8;
  const std::size_t lanes = hn::Lanes(df);
  const float* scale_table = e4m3::decode_table();

  V sums[kRows][kWeightRows];
  for (int m = 0; m < kRows; ++m)
    for (int r = 0; r < kWeightRows; ++r) sums[m][r] = hn::Zero(df);

  for (std::int64_t group = 0; group < weight.groups; ++group) {
    const std::uint8_t* codes = weight.group_data(tile, group);
    const std::uint8_t* scales = codes + kCpuGroupCodeBytes;
    // Bytes [16h, 16h + 16) of a row: block h in the low nibbles, block 2 + h in the high ones.
    for (int half = 0; half < 2; ++half) {
      for (std::size_t lane0 = 0; lane0 < std::size_t(kBlock); lane0 += lanes) {
        V low[kWeightRows], high[kWeightRows];
        for (int r = 0; r < kWeightRows; ++r) {
          const int row = first_row + r;
          const auto raw = hn::PromoteTo(du, hn::LoadU(d8, codes + 32 * row + kBlock * half + lane0));
          low[r] = hn::Mul(DecodeE2M1(df, LowNibble(du, raw)), hn::Set(df, scale_table[scales[4 * row + half]]));
          high[r] = hn::Mul(DecodeE2M1(df, hn::ShiftRight<4>(raw)), hn::Set(df, scale_table[scales[4 * row + 2 + half]]));
        }
        // Multiply: each activation vector is loaded once and meets every decoded weight row.
        for (int m = 0; m < kRows; ++m) {
          const float* a = activations + m * activation_stride + group * kCpuGroupK + kBlock * half + lane0;
          const V a_low = hn::LoadU(df, a);
          const V a_high = hn::LoadU(df, a + 2 * kBlock);
          for (int r = 0; r < kWeightRows; ++r) {
            sums[m][r] = hn::MulAdd(low[r], a_low, sums[m][r]);
            sums[m][r] = hn::MulAdd(high[r], a_high, sums[m][r]);
          }
        }
      }
    }
  }
  const std::int64_t first_output = tile * kCpuTileRows + first_row;
  for (int m = 0; m < kRows; ++m)
    for (int r = 0; r < kWeightRows; ++r)
      accumulators[m * accumulator_stride + first_output + r] = hn::GetLane(hn::SumOfLanes(df, sums[m][r]));
}

template <int kWeightRows, class DF>
HWY_INLINE void FusedWeightTile(DF df, const CpuWeight& weight, std::int64_t tile, int first_row, const float* activations,
                                std::int64_t rows, float* accumulators) {
  constexpr int kTile = cpu_tuning::kFusedActivationRowsPerTile;
  static_assert(kTile == 4, "the switch below unrolls tiles of up to 4 activation rows");
  const std::int64_t stride = weight.padded_k(), out_stride = weight.padded_rows();
  for (std::int64_t m = 0; m < rows; m += kTile) {
    const float* a = activations + m * stride;
    float* out = accumulators + m * out_stride;
    switch (std::min<std::int64_t>(kTile, rows - m)) {
      case 1: FusedTile<1, kWeightRows>(df, weight, tile, first_row, a, stride, out, out_stride); break;
      case 2: FusedTile<2, kWeightRows>(df, weight, tile, first_row, a, stride, out, out_stride); break;
      case 3: FusedTile<3, kWeightRows>(df, weight, tile, first_row, a, stride, out, out_stride); break;
      default: FusedTile<4, kWeightRows>(df, weight, tile, first_row, a, stride, out, out_stride); break;
    }
  }
}

// Weight tiles outermost: a tile's codes (4 rows x K/2 bytes) stay in L1 while every activation
// tile passes over them, so the weight streams from memory once per call.
void FusedSmallM(const CpuWeight& weight, const float* activations, std::int64_t rows, std::int64_t tile_begin,
                 std::int64_t tile_end, float* accumulators) {
  const hn::ScalableTag<float> df;
  static_assert(kCpuTileRows % kWeightRowsPerTile == 0, "register tiles split a layout tile evenly");
  for (std::int64_t tile = tile_begin; tile < tile_end; ++tile)
    for (int first_row = 0; first_row < kCpuTileRows; first_row += kWeightRowsPerTile)
      FusedWeightTile<kWeightRowsPerTile>(df, weight, tile, first_row, activations, rows, accumulators);
}

void DecodeRows(const CpuWeight& weight, std::int64_t row_begin, std::int64_t row_end, float* out) {
  const hn::ScalableTag<float> df;
  const hn::RebindToUnsigned<decltype(df)> du;
  const hn::Rebind<std::uint8_t, decltype(df)> d8;
  const std::size_t lanes = hn::Lanes(df);
  const float* scale_table = e4m3::decode_table();
  const std::int64_t k = weight.cols;
  for (std::int64_t row = row_begin; row < row_end; ++row) {
    const std::int64_t tile = row / kCpuTileRows, r = row % kCpuTileRows;
    float* destination = out + (row - row_begin) * k;
    for (std::int64_t group = 0; group < weight.groups; ++group) {
      const std::uint8_t* codes = weight.group_data(tile, group) + 32 * r;
      const std::uint8_t* scales = weight.group_data(tile, group) + kCpuGroupCodeBytes + 4 * r;
      for (int half = 0; half < 2; ++half) {
        // K is a multiple of 16, so a block is stored whole or is padding past K.
        const std::int64_t low_k = group * kCpuGroupK + kBlock * half, high_k = low_k + 2 * kBlock;
        const auto low_scale = hn::Set(df, scale_table[scales[half]]);
        const auto high_scale = hn::Set(df, scale_table[scales[2 + half]]);
        for (std::size_t lane0 = 0; lane0 < std::size_t(kBlock); lane0 += lanes) {
          const auto raw = hn::PromoteTo(du, hn::LoadU(d8, codes + kBlock * half + lane0));
          if (low_k < k) hn::StoreU(hn::Mul(DecodeE2M1(df, hn::And(raw, hn::Set(du, 15u))), low_scale), df, destination + low_k + lane0);
          if (high_k < k) hn::StoreU(hn::Mul(DecodeE2M1(df, hn::ShiftRight<4>(raw)), high_scale), df, destination + high_k + lane0);
        }
      }
    }
  }
}

const char* TargetName() { return hwy::TargetName(HWY_TARGET); }
std::int64_t FusedMaxM() { return kFusedMaxM; }

}  // namespace HWY_NAMESPACE
}  // namespace cpu_kernels
}  // namespace fp4gemm
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace fp4gemm::cpu_kernels {

HWY_EXPORT(FusedSmallM);
HWY_EXPORT(DecodeRows);
HWY_EXPORT(TargetName);
HWY_EXPORT(FusedMaxM);

void fused_small_m(const CpuWeight& weight, const float* activations, std::int64_t rows, std::int64_t tile_begin,
                   std::int64_t tile_end, float* accumulators) {
  HWY_DYNAMIC_DISPATCH(FusedSmallM)(weight, activations, rows, tile_begin, tile_end, accumulators);
}

void decode_rows(const CpuWeight& weight, std::int64_t row_begin, std::int64_t row_end, float* out) {
  HWY_DYNAMIC_DISPATCH(DecodeRows)(weight, row_begin, row_end, out);
}

const char* active_target() { return HWY_DYNAMIC_DISPATCH(TargetName)(); }

std::int64_t fused_max_m() { return HWY_DYNAMIC_DISPATCH(FusedMaxM)(); }

}  // namespace fp4gemm::cpu_kernels
#endif
