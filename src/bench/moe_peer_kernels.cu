// The GPU MoE peers' small kernels (moe_peer_kernels.hpp): plain grid-stride loops; they are a
// small share of a peer's time next to its GEMMs, so clarity wins over tuning here.
#include <cuda_bf16.h>
#include <cuda_fp8.h>

#include "backends/cuda_common/cuda_check.hpp"
#include "bench/moe_peer_kernels.hpp"

namespace fp4gemm::bench {
namespace {

constexpr int kThreads = 256;
constexpr float kE4m3Max = 448.0f;

unsigned blocks_for(std::int64_t count) {
  const std::int64_t blocks = (count + kThreads - 1) / kThreads;
  return unsigned(blocks < 65536 ? (blocks > 0 ? blocks : 1) : 65536);
}

__device__ __forceinline__ float load_bf16(const std::uint16_t* values, std::int64_t i) {
  return __uint_as_float(std::uint32_t(values[i]) << 16);
}

__device__ __forceinline__ std::uint16_t to_bf16(float value) {
  return __bfloat16_as_ushort(__float2bfloat16_rn(value));
}

// Non-negative floats order like their bit patterns, so an integer atomicMax finds the largest.
__device__ __forceinline__ void atomic_max_nonnegative(float* target, float value) {
  atomicMax(reinterpret_cast<unsigned int*>(target), __float_as_uint(value));
}

__device__ __forceinline__ float e4m3_scale(const float* amax) {
  const float largest = *amax;
  return largest > 0.0f ? largest / kE4m3Max : 1.0f;
}

__global__ void gather_kernel(const std::uint16_t* x, const std::int32_t* gather, std::int64_t rows, std::int64_t hidden,
                              std::uint16_t* out) {
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < rows * hidden;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t row = i / hidden, column = i % hidden;
    out[i] = x[std::int64_t(gather[row]) * hidden + column];
  }
}

__global__ void absmax_kernel(const std::uint16_t* x, std::int64_t count, float* amax) {
  float largest = 0.0f;
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += std::int64_t(gridDim.x) * blockDim.x)
    largest = fmaxf(largest, fabsf(load_bf16(x, i)));
  for (int offset = 16; offset > 0; offset /= 2) largest = fmaxf(largest, __shfl_down_sync(0xFFFFFFFFu, largest, offset));
  if ((threadIdx.x & 31) == 0) atomic_max_nonnegative(amax, largest);
}

__global__ void quantize_kernel(const std::uint16_t* x, const std::int32_t* gather, std::int64_t rows, std::int64_t hidden,
                                const float* amax, float* scale, __nv_fp8_e4m3* out) {
  const float step = e4m3_scale(amax);
  if (blockIdx.x == 0 && threadIdx.x == 0) *scale = step;
  const float inverse = 1.0f / step;
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < rows * hidden;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t row = i / hidden, column = i % hidden;
    const std::int64_t source = (gather != nullptr ? std::int64_t(gather[row]) : row) * hidden + column;
    out[i] = __nv_fp8_e4m3(load_bf16(x, source) * inverse);  // satfinite: |x| <= amax maps within 448
  }
}

__global__ void silu_mul_kernel(const std::uint16_t* gate_up, std::int64_t rows, std::int64_t inter, std::uint16_t* h,
                                float* amax) {
  float largest = 0.0f;
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < rows * inter;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t row = i / inter, column = i % inter;
    const float gate = load_bf16(gate_up, row * 2 * inter + column), up = load_bf16(gate_up, row * 2 * inter + inter + column);
    const std::uint16_t value = to_bf16(gate / (1.0f + __expf(-gate)) * up);
    h[i] = value;
    largest = fmaxf(largest, fabsf(load_bf16(&value, 0)));
  }
  if (amax == nullptr) return;
  for (int offset = 16; offset > 0; offset /= 2) largest = fmaxf(largest, __shfl_down_sync(0xFFFFFFFFu, largest, offset));
  if ((threadIdx.x & 31) == 0) atomic_max_nonnegative(amax, largest);
}

__global__ void combine_kernel(const std::uint16_t* y, const std::int32_t* rows, const float* weights, std::int64_t tokens,
                               int top_k, std::int64_t hidden, std::uint16_t* out) {
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < tokens * hidden;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t token = i / hidden, column = i % hidden;
    float sum = 0.0f;
    for (int slot = 0; slot < top_k; ++slot) {
      const std::int64_t entry = token * top_k + slot;
      sum += weights[entry] * load_bf16(y, std::int64_t(rows[entry]) * hidden + column);
    }
    out[i] = to_bf16(sum);
  }
}

}  // namespace

void gather_rows_bf16(const std::uint16_t* x, const std::int32_t* gather, std::int64_t rows, std::int64_t hidden,
                      std::uint16_t* out, cudaStream_t stream) {
  if (rows * hidden == 0) return;
  gather_kernel<<<blocks_for(rows * hidden), kThreads, 0, stream>>>(x, gather, rows, hidden, out);
  cuda::check_launch("bench: launching the MoE peer's gather");
}

void absmax_bf16(const std::uint16_t* x, std::int64_t count, float* amax, cudaStream_t stream) {
  if (count == 0) return;
  absmax_kernel<<<blocks_for(count), kThreads, 0, stream>>>(x, count, amax);
  cuda::check_launch("bench: launching the MoE peer's absolute-maximum reduction");
}

void quantize_rows_e4m3(const std::uint16_t* x, const std::int32_t* gather, std::int64_t rows, std::int64_t hidden,
                        const float* amax, float* scale, std::uint8_t* out, cudaStream_t stream) {
  if (rows * hidden == 0) return;
  quantize_kernel<<<blocks_for(rows * hidden), kThreads, 0, stream>>>(x, gather, rows, hidden, amax, scale,
                                                                     reinterpret_cast<__nv_fp8_e4m3*>(out));
  cuda::check_launch("bench: launching the MoE peer's E4M3 quantization");
}

void silu_mul_bf16(const std::uint16_t* gate_up, std::int64_t rows, std::int64_t inter, std::uint16_t* h, float* amax,
                   cudaStream_t stream) {
  if (rows * inter == 0) return;
  silu_mul_kernel<<<blocks_for(rows * inter), kThreads, 0, stream>>>(gate_up, rows, inter, h, amax);
  cuda::check_launch("bench: launching the MoE peer's SiLU·mul");
}

void combine_bf16(const std::uint16_t* y, const std::int32_t* rows, const float* weights, std::int64_t tokens, int top_k,
                  std::int64_t hidden, std::uint16_t* out, cudaStream_t stream) {
  if (tokens * hidden == 0) return;
  combine_kernel<<<blocks_for(tokens * hidden), kThreads, 0, stream>>>(y, rows, weights, tokens, top_k, hidden, out);
  cuda::check_launch("bench: launching the MoE peer's weighted combine");
}

}  // namespace fp4gemm::bench
