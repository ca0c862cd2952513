// The streaming expert kernel of `cuda_moe`: gate_up (+ SiLU·mul) or down over every active expert
// in one launch, for NVFP4 experts. It is the staged kernel (cuda_moe_experts.cu) without shared
// memory or barriers, built for decode, where an expert serves a handful of entries and the layer
// is a stream of weight bytes that must reach HBM's rate:
// - a warp owns kRows weight rows (gate_up: gate row i and up row i; down: kDownRowsPerWarp
//   consecutive rows); each lane takes every 32nd 32-element unit of them;
// - a lane issues the 16-byte code loads (and 2-byte scale loads) of kBatch units of all its rows
//   before it uses any, so a warp keeps kBatch·kRows·512 bytes in flight instead of one load per
//   barrier;
// - activations (x rows through entry_token, or h rows) are read straight from global memory in
//   16-byte loads where aligned: every warp of the block reads the same rows, so they come from L1.
// Each weight byte of an active expert comes from HBM once per layer; an expert's further entries
// read it again from L1 or L2.
#include <cuda_bf16.h>

#include "backends/cuda_common/cuda_check.hpp"
#include "backends/cuda_common/nvfp4_decode.cuh"
#include "moe/cuda_moe/cuda_moe_code_order.hpp"
#include "moe/cuda_moe/cuda_moe_grouping.cuh"
#include "moe/cuda_moe/cuda_moe_shape.hpp"
#include "moe/cuda_moe/cuda_moe_streaming.hpp"

namespace fp4gemm::moe::cuda_moe {
namespace {

constexpr int kElementsPerScale = 16;

// 16 consecutive activations from element `col` of row `row`; kVector: 16-byte loads (the caller
// checked the alignment of the data pointer and of the row stride).
template <bool kVector>
__device__ __forceinline__ void load_sixteen(const DeviceRows& rows, std::int64_t row, std::int64_t col, float (&a)[16]) {
  const std::int64_t index = row * rows.stride + col;
  if (rows.bf16) {
    const auto* p = static_cast<const __nv_bfloat16*>(rows.data) + index;
    if constexpr (kVector) {
      const uint4 low = __ldg(reinterpret_cast<const uint4*>(p)), high = __ldg(reinterpret_cast<const uint4*>(p) + 1);
      const unsigned words[8] = {low.x, low.y, low.z, low.w, high.x, high.y, high.z, high.w};
#pragma unroll
      for (int i = 0; i < 8; ++i) {  // element 2i in the low half of word i
        a[2 * i] = __uint_as_float(words[i] << 16);
        a[2 * i + 1] = __uint_as_float(words[i] & 0xFFFF0000u);
      }
    } else {
#pragma unroll
      for (int j = 0; j < 16; ++j) a[j] = __bfloat162float(p[j]);
    }
  } else {
    const float* p = static_cast<const float*>(rows.data) + index;
    if constexpr (kVector) {
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        const float4 v = __ldg(reinterpret_cast<const float4*>(p) + q);
        a[4 * q] = v.x;
        a[4 * q + 1] = v.y;
        a[4 * q + 2] = v.z;
        a[4 * q + 3] = v.w;
      }
    } else {
#pragma unroll
      for (int j = 0; j < 16; ++j) a[j] = __ldg(p + j);
    }
  }
}

// The codes (kUnit / 8 words in fragment order: cuda_moe_code_order.hpp) and E4M3 scales (kUnit /
// 16 bytes, low byte first) of unit `unit`.
template <int kUnit>
__device__ __forceinline__ void load_unit(const std::uint8_t* codes, const std::uint8_t* scales, std::int64_t unit,
                                          unsigned (&words)[kUnit / 8], unsigned& scale_bytes) {
  if constexpr (kUnit == 32) {
    const uint4 v = __ldg(reinterpret_cast<const uint4*>(codes) + unit);
    words[0] = v.x;
    words[1] = v.y;
    words[2] = v.z;
    words[3] = v.w;
    scale_bytes = __ldg(reinterpret_cast<const unsigned short*>(scales) + unit);
  } else {
    const uint2 v = __ldg(reinterpret_cast<const uint2*>(codes) + unit);
    words[0] = v.x;
    words[1] = v.y;
    scale_bytes = __ldg(scales + unit);
  }
}

// Σ a[j]·e2m1(element j of half `half` of the unit): the block scale is applied by the caller.
// Word w of the half holds elements 8w..8w+7, column pair (p, p + 4) in its register p.
template <int kUnit>
__device__ __forceinline__ float half_dot(const unsigned (&words)[kUnit / 8], int half, const float (&a)[16]) {
  float sum = 0.0f;
#pragma unroll
  for (int w = 0; w < 2; ++w) {
#pragma unroll
    for (int pair = 0; pair < 4; ++pair) {
      float low, high;
      pair_values(words[half * 2 + w], pair, low, high);
      sum = fmaf(a[8 * w + pair], low, sum);
      sum = fmaf(a[8 * w + pair + 4], high, sum);
    }
  }
  return sum;
}

template <bool kGateUp, int kUnit, bool kVector>
__global__ void __launch_bounds__(kExpertThreads, kStreamingBlocksPerSm)
streaming_expert_kernel(StackedExperts weights, DeviceRows input, Grouping grouping, bool round_to_bf16,
                        float* __restrict__ out) {
  constexpr int kRows = kGateUp ? 2 : kDownRowsPerWarp;
  constexpr int kBatch = kGateUp ? kGateUpBatch : kDownBatch;
  constexpr int kOutPerWarp = kGateUp ? 1 : kRows;
  constexpr int kHalves = kUnit / kElementsPerScale;
  GroupEntries group;
  if (!block_group(grouping, group)) return;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const std::int64_t out_rows = kGateUp ? weights.rows / 2 : weights.rows;
  const std::int64_t first_out = (std::int64_t(blockIdx.x) * kWarpsPerBlock + warp) * kOutPerWarp;
  if (first_out >= out_rows) return;  // whole warps; the kernel has no barriers
  const std::int64_t cols = weights.cols, units = cols / kUnit;
  const std::uint8_t* codes[kRows];
  const std::uint8_t* scales[kRows];
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    // Rows past the end (down's last warp) read the last row; their sums are never stored.
    const std::int64_t local = kGateUp ? first_out + r * out_rows : min(first_out + r, out_rows - 1);
    const std::int64_t row = group.expert * weights.rows + local;
    codes[r] = weights.codes + row * (cols / 2);
    scales[r] = weights.scales + row * (cols / kElementsPerScale);
  }
  const float scale_a = weights.global_scales[kGateUp ? 2 * group.expert : group.expert];
  const float scale_b = kGateUp ? weights.global_scales[2 * group.expert + 1] : 0.0f;

  // One entry at a time: at decode an expert has one or two entries, and a second entry finds this
  // warp's rows in L1 or L2. Keeping several entries' sums in registers instead cost 170-230
  // registers a thread (one block per SM, too few loads in flight to stream the weights).
  for (std::int64_t entry = group.begin; entry < group.end; ++entry) {
    const std::int64_t source = grouping.entry_token != nullptr ? grouping.entry_token[entry] : entry;
    float sums[kRows];
#pragma unroll
    for (int r = 0; r < kRows; ++r) sums[r] = 0.0f;
    for (std::int64_t first_unit = lane; first_unit < units; first_unit += 32 * kBatch) {
      unsigned words[kBatch][kRows][kUnit / 8];
      unsigned scale_bytes[kBatch][kRows];
#pragma unroll
      for (int b = 0; b < kBatch; ++b) {
        const std::int64_t unit = first_unit + 32 * b;
        if (unit >= units) break;
#pragma unroll
        for (int r = 0; r < kRows; ++r) load_unit<kUnit>(codes[r], scales[r], unit, words[b][r], scale_bytes[b][r]);
      }
#pragma unroll
      for (int b = 0; b < kBatch; ++b) {
        const std::int64_t unit = first_unit + 32 * b;
        if (unit >= units) break;
#pragma unroll
        for (int half = 0; half < kHalves; ++half) {
          float a[16];
          load_sixteen<kVector>(input, source, unit * kUnit + half * kElementsPerScale, a);
#pragma unroll
          for (int r = 0; r < kRows; ++r) {
            const float block_scale = cuda::e4m3_value((scale_bytes[b][r] >> (8 * half)) & 0xFFu);
            sums[r] = fmaf(block_scale, half_dot<kUnit>(words[b][r], half, a), sums[r]);
          }
        }
      }
    }
    float total[kRows];
#pragma unroll
    for (int r = 0; r < kRows; ++r) total[r] = warp_sum(sums[r]);
    if (lane != 0) continue;
    if constexpr (kGateUp) {
      out[entry * out_rows + first_out] = silu_mul(total[0] * scale_a, total[1] * scale_b, round_to_bf16);
    } else {
#pragma unroll
      for (int r = 0; r < kRows; ++r)
        if (first_out + r < out_rows) out[entry * out_rows + first_out + r] = total[r] * scale_a;
    }
  }
}

// 16-byte activation loads need a 16-byte aligned base and rows a multiple of 16 bytes apart.
bool vector_loads_fit(const DeviceRows& input) {
  const std::size_t element = input.bf16 ? 2 : 4;
  return reinterpret_cast<std::uintptr_t>(input.data) % 16 == 0 && (std::size_t(input.stride) * element) % 16 == 0;
}

template <bool kGateUp, int kUnit>
void launch_unit(const dim3& grid, const StackedExperts& weights, const DeviceRows& input, const Grouping& grouping,
                 bool round_to_bf16, float* out, cudaStream_t stream) {
  if (vector_loads_fit(input)) {
    streaming_expert_kernel<kGateUp, kUnit, true><<<grid, kExpertThreads, 0, stream>>>(weights, input, grouping, round_to_bf16, out);
  } else {
    streaming_expert_kernel<kGateUp, kUnit, false><<<grid, kExpertThreads, 0, stream>>>(weights, input, grouping, round_to_bf16, out);
  }
}

}  // namespace

template <bool kGateUp>
void launch_streaming(const StackedExperts& weights, const DeviceRows& input, const Grouping& grouping, bool round_to_bf16,
                      float* out, cudaStream_t stream, const char* what) {
  const std::int64_t out_rows = kGateUp ? weights.rows / 2 : weights.rows;
  if (out_rows == 0 || grouping.expert_slots == 0) return;
  const GroupedGrid shape = grouped_grid(out_rows, grouping.expert_slots, grouping.expert_slots, kGateUp ? 1 : kDownRowsPerWarp);
  const dim3 grid(unsigned(shape.row_tiles), unsigned(shape.expert_slots));
  if (unit_elements_for(weights.cols) == 32) {
    launch_unit<kGateUp, 32>(grid, weights, input, grouping, round_to_bf16, out, stream);
  } else {
    launch_unit<kGateUp, 16>(grid, weights, input, grouping, round_to_bf16, out, stream);
  }
  cuda::check_launch(what);
}

template void launch_streaming<true>(const StackedExperts&, const DeviceRows&, const Grouping&, bool, float*, cudaStream_t, const char*);
template void launch_streaming<false>(const StackedExperts&, const DeviceRows&, const Grouping&, bool, float*, cudaStream_t, const char*);

}  // namespace fp4gemm::moe::cuda_moe
