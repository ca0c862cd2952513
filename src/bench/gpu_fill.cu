// Counter-based random fills: value i depends only on (seed, i), so any grid shape gives the same data.
#include <cuda_bf16.h>
#include <cuda_fp8.h>

#include "backends/cuda_common/cuda_check.hpp"
#include "bench/gpu_fill.hpp"

namespace fp4gemm::bench {
namespace {

constexpr int kThreadsPerBlock = 256;

// splitmix64 finaliser: a well-mixed 64-bit hash of the counter.
__device__ __forceinline__ std::uint64_t mix(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

__device__ __forceinline__ float uniform_signed(std::uint64_t seed, std::int64_t index) {
  const std::uint64_t bits = mix(seed ^ mix(std::uint64_t(index)));
  return float(bits >> 40) * (1.0f / 8388608.0f) - 1.0f;  // 24 random bits -> [-1, 1)
}

__global__ void fill_bf16_kernel(__nv_bfloat16* out, std::int64_t count, std::uint64_t seed) {
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += std::int64_t(gridDim.x) * blockDim.x)
    out[i] = __float2bfloat16_rn(uniform_signed(seed, i));
}

__global__ void fill_e4m3_kernel(__nv_fp8_e4m3* out, std::int64_t count, std::uint64_t seed) {
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += std::int64_t(gridDim.x) * blockDim.x)
    out[i] = __nv_fp8_e4m3(uniform_signed(seed, i));
}

unsigned grid_for(std::int64_t count) {
  // Grid-stride loops: enough blocks to fill any GPU, capped so the grid stays small.
  const std::int64_t blocks = (count + kThreadsPerBlock - 1) / kThreadsPerBlock;
  return unsigned(blocks < 65536 ? (blocks > 0 ? blocks : 1) : 65536);
}

}  // namespace

void fill_random_bf16(std::uint16_t* out, std::int64_t count, std::uint64_t seed, cudaStream_t stream) {
  if (count == 0) return;
  fill_bf16_kernel<<<grid_for(count), kThreadsPerBlock, 0, stream>>>(reinterpret_cast<__nv_bfloat16*>(out), count, seed);
  cuda::check_launch("bench: launching the random BF16 fill");
}

void fill_random_e4m3(std::uint8_t* out, std::int64_t count, std::uint64_t seed, cudaStream_t stream) {
  if (count == 0) return;
  fill_e4m3_kernel<<<grid_for(count), kThreadsPerBlock, 0, stream>>>(reinterpret_cast<__nv_fp8_e4m3*>(out), count, seed);
  cuda::check_launch("bench: launching the random E4M3 fill");
}

}  // namespace fp4gemm::bench
