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
#else
constexpr int kWeightRowsPerTile = cpu_tuning::kFusedWeightRowsPerTileNarrow;
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

// One tile: kRows activation rows x kWeightRows weight rows, full K. Decoded weights are kept in
// registers and reused across the activation rows.
template <int kRows, int kWeightRows, class DF>
HWY_INLINE void FusedTile(DF df, const CpuWeight& weight, const float* activations, std::int64_t activation_stride,
                          std::int64_t first_weight_row, float* accumulators, std::int64_t accumulator_stride) {
  using V = hn::Vec<DF>;
  const hn::RebindToUnsigned<DF> du;
  const hn::Rebind<std::uint8_t, DF> d8;
  const std::size_t lanes = hn::Lanes(df);
  const float* scale_table = e4m3::decode_table();

  V sums[kRows][kWeightRows];
  for (int m = 0; m < kRows; ++m)
    for (int r = 0; r < kWeightRows; ++r) sums[m][r] = hn::Zero(df);

  const std::uint8_t* codes[kWeightRows];
  const std::uint8_t* scales[kWeightRows];
  for (int r = 0; r < kWeightRows; ++r) {
    codes[r] = weight.pair_codes.data() + (first_weight_row + r) * weight.pairs * kBlock;
    scales[r] = weight.block_scales.data() + (first_weight_row + r) * weight.pairs * 2;
  }

  for (std::int64_t pair = 0; pair < weight.pairs; ++pair) {
    for (std::size_t lane0 = 0; lane0 < std::size_t(kBlock); lane0 += lanes) {
      // Decode: low nibbles are block 2p, high nibbles block 2p+1, both in element order.
      V low[kWeightRows], high[kWeightRows];
      for (int r = 0; r < kWeightRows; ++r) {
        const auto raw = hn::PromoteTo(du, hn::LoadU(d8, codes[r] + pair * kBlock + lane0));
        low[r] = hn::Mul(DecodeE2M1(df, LowNibble(du, raw)), hn::Set(df, scale_table[scales[r][2 * pair]]));
        high[r] = hn::Mul(DecodeE2M1(df, hn::ShiftRight<4>(raw)), hn::Set(df, scale_table[scales[r][2 * pair + 1]]));
      }
      // Multiply: each activation vector is loaded once and meets every decoded weight row.
      for (int m = 0; m < kRows; ++m) {
        const float* a = activations + m * activation_stride + pair * 2 * kBlock + lane0;
        const V a_low = hn::LoadU(df, a);
        const V a_high = hn::LoadU(df, a + kBlock);
        for (int r = 0; r < kWeightRows; ++r) {
          sums[m][r] = hn::MulAdd(low[r], a_low, sums[m][r]);
          sums[m][r] = hn::MulAdd(high[r], a_high, sums[m][r]);
        }
      }
    }
  }
  for (int m = 0; m < kRows; ++m)
    for (int r = 0; r < kWeightRows; ++r)
      accumulators[m * accumulator_stride + first_weight_row + r] = hn::GetLane(hn::SumOfLanes(df, sums[m][r]));
}

template <int kWeightRows, class DF>
HWY_INLINE void FusedWeightTile(DF df, const CpuWeight& weight, const float* activations, std::int64_t rows,
                                std::int64_t stride, std::int64_t first_weight_row, float* accumulators) {
  constexpr int kTile = cpu_tuning::kFusedActivationRowsPerTile;
  static_assert(kTile == 4, "the switch below unrolls tiles of up to 4 activation rows");
  for (std::int64_t m = 0; m < rows; m += kTile) {
    const float* a = activations + m * stride;
    float* out = accumulators + m * weight.rows;
    switch (std::min<std::int64_t>(kTile, rows - m)) {
      case 1: FusedTile<1, kWeightRows>(df, weight, a, stride, first_weight_row, out, weight.rows); break;
      case 2: FusedTile<2, kWeightRows>(df, weight, a, stride, first_weight_row, out, weight.rows); break;
      case 3: FusedTile<3, kWeightRows>(df, weight, a, stride, first_weight_row, out, weight.rows); break;
      default: FusedTile<4, kWeightRows>(df, weight, a, stride, first_weight_row, out, weight.rows); break;
    }
  }
}

// Weight tiles outermost: a tile's codes (kWeightRowsPerTile x K/2 bytes) stay in L1 while every
// activation tile passes over them, so the weight streams from memory once per call.
void FusedSmallM(const CpuWeight& weight, const float* activations, std::int64_t rows, std::int64_t row_begin,
                 std::int64_t row_end, float* accumulators) {
  const hn::ScalableTag<float> df;
  const std::int64_t stride = padded_k(weight.pairs);
  std::int64_t row = row_begin;
  for (; row + kWeightRowsPerTile <= row_end; row += kWeightRowsPerTile)
    FusedWeightTile<kWeightRowsPerTile>(df, weight, activations, rows, stride, row, accumulators);
  for (; row < row_end; ++row) FusedWeightTile<1>(df, weight, activations, rows, stride, row, accumulators);
}

void DecodeRows(const CpuWeight& weight, std::int64_t row_begin, std::int64_t row_end, float* out) {
  const hn::ScalableTag<float> df;
  const hn::RebindToUnsigned<decltype(df)> du;
  const hn::Rebind<std::uint8_t, decltype(df)> d8;
  const std::size_t lanes = hn::Lanes(df);
  const float* scale_table = e4m3::decode_table();
  const std::int64_t k = weight.cols, blocks = k / kBlock;
  for (std::int64_t row = row_begin; row < row_end; ++row) {
    const std::uint8_t* codes = weight.pair_codes.data() + row * weight.pairs * kBlock;
    const std::uint8_t* scales = weight.block_scales.data() + row * weight.pairs * 2;
    float* destination = out + (row - row_begin) * k;
    for (std::int64_t pair = 0; pair < weight.pairs; ++pair) {
      const auto low_scale = hn::Set(df, scale_table[scales[2 * pair]]);
      const auto high_scale = hn::Set(df, scale_table[scales[2 * pair + 1]]);
      const bool has_high_block = 2 * pair + 1 < blocks;  // the padding block is not stored
      for (std::size_t lane0 = 0; lane0 < std::size_t(kBlock); lane0 += lanes) {
        const auto raw = hn::PromoteTo(du, hn::LoadU(d8, codes + pair * kBlock + lane0));
        float* low_out = destination + pair * 2 * kBlock + lane0;
        hn::StoreU(hn::Mul(DecodeE2M1(df, hn::And(raw, hn::Set(du, 15u))), low_scale), df, low_out);
        if (has_high_block) hn::StoreU(hn::Mul(DecodeE2M1(df, hn::ShiftRight<4>(raw)), high_scale), df, low_out + kBlock);
      }
    }
  }
}

const char* TargetName() { return hwy::TargetName(HWY_TARGET); }

}  // namespace HWY_NAMESPACE
}  // namespace cpu_kernels
}  // namespace fp4gemm
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace fp4gemm::cpu_kernels {

HWY_EXPORT(FusedSmallM);
HWY_EXPORT(DecodeRows);
HWY_EXPORT(TargetName);

void fused_small_m(const CpuWeight& weight, const float* activations, std::int64_t rows, std::int64_t row_begin,
                   std::int64_t row_end, float* accumulators) {
  HWY_DYNAMIC_DISPATCH(FusedSmallM)(weight, activations, rows, row_begin, row_end, accumulators);
}

void decode_rows(const CpuWeight& weight, std::int64_t row_begin, std::int64_t row_end, float* out) {
  HWY_DYNAMIC_DISPATCH(DecodeRows)(weight, row_begin, row_end, out);
}

const char* active_target() { return HWY_DYNAMIC_DISPATCH(TargetName)(); }

}  // namespace fp4gemm::cpu_kernels
#endif
