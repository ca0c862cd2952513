// The staged expert kernels of `cuda_moe` (gate_up (+ SiLU·mul) and down over every active expert
// in one launch each; the streaming kernel is cuda_moe_streaming.cu), the choice between them, and
// the weighted combine.
//
// Grouped kernel: block (x, y) takes row tile x (kWarpsPerBlock rows) of the y-th active expert;
// blocks with y beyond the device-side active count exit at once (the grid is fixed, sized for
// the most experts that can be active). Each warp owns one output row (gate_up: gate row i and up
// row i). Per K tile the block stages up to kTokensPerChunk activation rows of its expert's
// entries in shared memory; each lane decodes one unit (32 elements: 16 code bytes in one 16-byte
// load and two E4M3 scales; 16 elements with an 8-byte load when K is not a multiple of 32) and
// multiplies it into every staged row, FP32 products and sums; the warp then reduces each row's
// partial sums with a fixed butterfly and lane 0 applies the global scale(s) and the epilogue.
// Every weight byte of an active expert is read once per chunk of kTokensPerChunk of its entries:
// at decode (a handful of entries per expert) exactly once, as a memory-bound kernel must.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>

#include "backends/cuda_common/cuda_check.hpp"
#include "backends/cuda_common/nvfp4_decode.cuh"
#include "moe/cuda_moe/cuda_moe_code_order.hpp"
#include "moe/cuda_moe/cuda_moe_grouping.cuh"
#include "moe/cuda_moe/cuda_moe_kernels.hpp"
#include "moe/cuda_moe/cuda_moe_launch.cuh"
#include "moe/cuda_moe/cuda_moe_shape.hpp"
#include "moe/cuda_moe/cuda_moe_streaming.hpp"

namespace fp4gemm::moe::cuda_moe {
namespace {

constexpr int kElementsPerScale = 16;
// The combine's grid-stride loop covers any size with at most this many blocks.
constexpr std::int64_t kMaxCombineBlocks = 1 << 16;

__device__ __forceinline__ float load_element(const DeviceRows& rows, std::int64_t row, std::int64_t col) {
  const std::int64_t index = row * rows.stride + col;
  return rows.bf16 ? __bfloat162float(static_cast<const __nv_bfloat16*>(rows.data)[index])
                   : static_cast<const float*>(rows.data)[index];
}

// The kUnit weights of one unit (unit index `unit` of a row), e2m1 x e4m3, global scale not applied:
// word w holds elements 8w..8w+7 in fragment order (cuda_moe_code_order.hpp), column pair (p, p + 4)
// in its register p.
template <int kUnit>
__device__ __forceinline__ void decode_unit(const std::uint8_t* __restrict__ codes, const std::uint8_t* __restrict__ scales,
                                            std::int64_t unit, float (&values)[kUnit]) {
  constexpr int kWords = kUnit / 8;
  unsigned words[kWords];
  if constexpr (kUnit == 32) {
    const uint4 word = __ldg(reinterpret_cast<const uint4*>(codes) + unit);
    words[0] = word.x;
    words[1] = word.y;
    words[2] = word.z;
    words[3] = word.w;
  } else {
    const uint2 word = __ldg(reinterpret_cast<const uint2*>(codes) + unit);
    words[0] = word.x;
    words[1] = word.y;
  }
  constexpr int kScales = kUnit / kElementsPerScale;
  float block_scale[kScales];
#pragma unroll
  for (int s = 0; s < kScales; ++s) block_scale[s] = cuda::e4m3_value(__ldg(scales + unit * kScales + s));
#pragma unroll
  for (int w = 0; w < kWords; ++w) {
    const float scale = block_scale[(8 * w) / kElementsPerScale];
#pragma unroll
    for (int pair = 0; pair < 4; ++pair) {
      float low, high;
      pair_values(words[w], pair, low, high);
      values[8 * w + pair] = low * scale;
      values[8 * w + pair + 4] = high * scale;
    }
  }
}

// The kUnit FP32 weights of one unit of a dense row (16-byte loads; rows are 64-byte aligned).
template <int kUnit>
__device__ __forceinline__ void load_dense_unit(const float* __restrict__ row, std::int64_t unit, float (&values)[kUnit]) {
  const float4* vectors = reinterpret_cast<const float4*>(row + unit * kUnit);
#pragma unroll
  for (int q = 0; q < kUnit / 4; ++q) {
    const float4 vector = __ldg(vectors + q);
    values[4 * q] = vector.x;
    values[4 * q + 1] = vector.y;
    values[4 * q + 2] = vector.z;
    values[4 * q + 3] = vector.w;
  }
}

// Where element c of a staged row lives: unit c / kUnit, padded to kUnit + 1 floats.
template <int kUnit>
__device__ __forceinline__ int staged_index(int token, int c) {
  return token * staged_floats_per_token(kUnit) + (c / kUnit) * (kUnit + 1) + c % kUnit;
}

// kGateUp: out = h [entries, rows/2] (weights [2I, K]); else out = y [entries, rows].
// kDense: the weights are FP32 (weights.dense), else NVFP4.
template <bool kGateUp, int kUnit, bool kDense>
__global__ void __launch_bounds__(kExpertThreads)
grouped_expert_kernel(StackedExperts weights, DeviceRows input, Grouping grouping, bool round_to_bf16,
                      float* __restrict__ out) {
  __shared__ float staged[kStagedFloats];
  GroupEntries group;
  if (!block_group(grouping, group)) return;
  const std::int64_t expert = group.expert, begin = group.begin, end = group.end;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const std::int64_t out_rows = kGateUp ? weights.rows / 2 : weights.rows;
  const std::int64_t row = std::int64_t(blockIdx.x) * kWarpsPerBlock + warp;
  const bool row_valid = row < out_rows;  // whole warps; invalid ones still join the block's barriers
  const std::int64_t cols = weights.cols;
  const std::int64_t first_row = expert * weights.rows + (row_valid ? row : 0);
  const std::uint8_t* codes_a = weights.codes + first_row * (cols / 2);
  const std::uint8_t* scales_a = weights.scales + first_row * (cols / kElementsPerScale);
  const std::int64_t second_row = first_row + out_rows;  // the up row (gate_up only)
  const std::uint8_t* codes_b = weights.codes + (kGateUp ? second_row : first_row) * (cols / 2);
  const std::uint8_t* scales_b = weights.scales + (kGateUp ? second_row : first_row) * (cols / kElementsPerScale);
  const float* dense_a = kDense ? weights.dense + first_row * cols : nullptr;
  const float* dense_b = kDense ? weights.dense + (kGateUp ? second_row : first_row) * cols : nullptr;
  const float scale_a = kDense ? 1.0f : weights.global_scales[kGateUp ? 2 * expert : expert];
  const float scale_b = kDense ? 1.0f : kGateUp ? weights.global_scales[2 * expert + 1] : 0.0f;

  for (std::int64_t chunk = begin; chunk < end; chunk += kTokensPerChunk) {
    const int count = end - chunk < kTokensPerChunk ? int(end - chunk) : kTokensPerChunk;
    float sum_a[kTokensPerChunk], sum_b[kTokensPerChunk];
#pragma unroll
    for (int t = 0; t < kTokensPerChunk; ++t) sum_a[t] = sum_b[t] = 0.0f;

    for (std::int64_t k0 = 0; k0 < cols; k0 += kKTile) {
      const int tile = cols - k0 < kKTile ? int(cols - k0) : kKTile;
      __syncthreads();  // the previous tile has been read by every warp
      // Only the chunk's `count` rows and the tile's columns are ever read back.
      for (int index = threadIdx.x; index < count * kKTile; index += kExpertThreads) {
        const int t = index / kKTile, c = index % kKTile;
        float value = 0.0f;
        if (c < tile) {
          const std::int64_t entry = chunk + t;
          const std::int64_t source_row = grouping.entry_token != nullptr ? grouping.entry_token[entry] : entry;
          value = load_element(input, source_row, k0 + c);
        }
        staged[staged_index<kUnit>(t, c)] = value;
      }
      __syncthreads();
      if (!row_valid) continue;
      const std::int64_t first_unit = k0 / kUnit;
      for (int u = lane; u < tile / kUnit; u += 32) {
        float weight_a[kUnit], weight_b[kUnit];
        if constexpr (kDense) {
          load_dense_unit<kUnit>(dense_a, first_unit + u, weight_a);
          if constexpr (kGateUp) load_dense_unit<kUnit>(dense_b, first_unit + u, weight_b);
        } else {
          decode_unit<kUnit>(codes_a, scales_a, first_unit + u, weight_a);
          if constexpr (kGateUp) decode_unit<kUnit>(codes_b, scales_b, first_unit + u, weight_b);
        }
#pragma unroll
        for (int t = 0; t < kTokensPerChunk; ++t) {
          if (t >= count) break;
          const float* activation = staged + staged_index<kUnit>(t, u * kUnit);
#pragma unroll
          for (int j = 0; j < kUnit; ++j) {
            sum_a[t] = fmaf(activation[j], weight_a[j], sum_a[t]);
            if constexpr (kGateUp) sum_b[t] = fmaf(activation[j], weight_b[j], sum_b[t]);
          }
        }
      }
    }
    if (!row_valid) continue;
#pragma unroll
    for (int t = 0; t < kTokensPerChunk; ++t) {
      if (t >= count) break;  // uniform across the warp
      const float a = warp_sum(sum_a[t]);
      const float b = kGateUp ? warp_sum(sum_b[t]) : 0.0f;
      if (lane != 0) continue;
      const std::int64_t entry = chunk + t;
      if constexpr (kGateUp) {
        out[entry * out_rows + row] = silu_mul(a * scale_a, b * scale_b, round_to_bf16);
      } else {
        out[entry * out_rows + row] = a * scale_a;
      }
    }
  }
}

template <bool kGateUp>
void launch_grouped(const StackedExperts& weights, const DeviceRows& input, const Grouping& grouping, bool round_to_bf16,
                    float* out, cudaStream_t stream, const char* what) {
  const std::int64_t out_rows = kGateUp ? weights.rows / 2 : weights.rows;
  if (out_rows == 0 || grouping.expert_slots == 0) return;
  const GroupedGrid shape = grouped_grid(out_rows, grouping.expert_slots, grouping.expert_slots);
  const dim3 grid(unsigned(shape.row_tiles), unsigned(shape.expert_slots));
  const bool wide = unit_elements_for(weights.cols) == 32;
  if (weights.dense != nullptr) {
    if (wide) {
      grouped_expert_kernel<kGateUp, 32, true><<<grid, kExpertThreads, 0, stream>>>(weights, input, grouping, round_to_bf16, out);
    } else {
      grouped_expert_kernel<kGateUp, 16, true><<<grid, kExpertThreads, 0, stream>>>(weights, input, grouping, round_to_bf16, out);
    }
  } else if (wide) {
    grouped_expert_kernel<kGateUp, 32, false><<<grid, kExpertThreads, 0, stream>>>(weights, input, grouping, round_to_bf16, out);
  } else {
    grouped_expert_kernel<kGateUp, 16, false><<<grid, kExpertThreads, 0, stream>>>(weights, input, grouping, round_to_bf16, out);
  }
  cuda::check_launch(what);
}

// Output element `index` (token-major over [tokens, hidden]) per thread, a grid-stride loop so any
// T fits the grid.
__global__ void combine_kernel(const float* __restrict__ y, const std::int32_t* __restrict__ entry_of,
                               const float* __restrict__ topk_weights, std::int64_t tokens, int k, std::int64_t hidden,
                               const float* __restrict__ shared_y, const float* __restrict__ shared_weight, void* out,
                               DType out_dtype, std::int64_t out_stride) {
  enter_dependent_kernel();
  const std::int64_t elements = tokens * hidden;
  for (std::int64_t index = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; index < elements;
       index += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t token = index / hidden, column = index % hidden;
    float sum = 0.0f;
    bool bad_id = false;
    // Slots in groups whose loads are all issued before any is used: one slot at a time, each y
    // load waited on its entry load, and at T = 1 the ten slots took ten such round trips (6 us on
    // an H200). The sum still runs in slot order.
    for (int first = 0; first < k; first += kCombineSlotsInFlight) {
      std::int32_t entries[kCombineSlotsInFlight];
      float weights[kCombineSlotsInFlight], values[kCombineSlotsInFlight];
#pragma unroll
      for (int j = 0; j < kCombineSlotsInFlight; ++j) {
        const bool in_k = first + j < k;
        entries[j] = in_k ? entry_of[token * k + first + j] : 0;
        weights[j] = in_k ? topk_weights[token * k + first + j] : 0.0f;
      }
#pragma unroll
      for (int j = 0; j < kCombineSlotsInFlight; ++j) {
        values[j] = first + j < k && entries[j] >= 0 ? y[std::int64_t(entries[j]) * hidden + column] : 0.0f;
      }
#pragma unroll
      for (int j = 0; j < kCombineSlotsInFlight; ++j) {
        if (first + j >= k) break;
        if (entries[j] < 0) {
          bad_id = true;
          continue;
        }
        sum = fmaf(weights[j], values[j], sum);
      }
    }
    if (shared_y != nullptr) sum = fmaf(shared_weight[token], shared_y[index], sum);
    if (bad_id) sum = __int_as_float(0x7FC00000);
    const std::int64_t destination = token * out_stride + column;
    if (out_dtype == DType::f32) {
      static_cast<float*>(out)[destination] = sum;
    } else if (out_dtype == DType::bf16) {
      static_cast<__nv_bfloat16*>(out)[destination] = __float2bfloat16_rn(sum);
    } else {
      static_cast<__half*>(out)[destination] = __float2half_rn(sum);
    }
  }
}

}  // namespace

void launch_gate_up(const StackedExperts& weights, const DeviceRows& input, const Grouping& grouping, bool round_to_bf16,
                    ExpertKernel kernel, float* h, cudaStream_t stream) {
  const char* what = "cuda_moe: launching the grouped gate_up kernel";
  if (kernel == ExpertKernel::streaming && weights.dense == nullptr) {
    launch_streaming<true>(weights, input, grouping, round_to_bf16, h, stream, what);
  } else {
    launch_grouped<true>(weights, input, grouping, round_to_bf16, h, stream, what);
  }
}

void launch_down(const StackedExperts& weights, const float* h, const Grouping& grouping, ExpertKernel kernel, float* y,
                 cudaStream_t stream) {
  const DeviceRows input{h, false, weights.cols};
  // h is indexed by entry, not by token: its rows are read where the entries are.
  Grouping by_entry = grouping;
  by_entry.entry_token = nullptr;
  const char* what = "cuda_moe: launching the grouped down kernel";
  if (kernel == ExpertKernel::streaming && weights.dense == nullptr) {
    launch_streaming<false>(weights, input, by_entry, false, y, stream, what);
  } else {
    launch_grouped<false>(weights, input, by_entry, false, y, stream, what);
  }
}

void launch_combine(const float* y, const std::int32_t* entry_of, const float* topk_weights, std::int64_t tokens, int k,
                    std::int64_t hidden, const float* shared_y, const float* shared_weight, const MutableDenseView& out,
                    cudaStream_t stream, bool programmatic) {
  const std::int64_t elements = tokens * hidden;
  if (elements == 0) return;
  const std::int64_t blocks = std::min((elements + kElementwiseThreads - 1) / kElementwiseThreads, kMaxCombineBlocks);
  launch_kernel(combine_kernel, dim3(unsigned(blocks)), dim3(kElementwiseThreads), stream, programmatic,
                "cuda_moe: launching the weighted combine kernel", y, entry_of, topk_weights, tokens, k, hidden, shared_y, shared_weight,
                out.data, out.dtype, out.stride());
}

}  // namespace fp4gemm::moe::cuda_moe
