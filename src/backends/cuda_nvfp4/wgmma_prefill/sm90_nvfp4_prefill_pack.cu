#include "backends/cuda_nvfp4/wgmma_prefill/sm90_nvfp4_prefill_pack.hpp"

#include "backends/cuda_common/programmatic_launch.cuh"

namespace fp4gemm::cuda_nvfp4 {
namespace {

// One thread per (group, chunk, lane): rows g and g + 8 of the group, the lane's 16 columns of the
// chunk (two 16-byte loads each), four 16-byte fragments out. Consecutive threads are consecutive
// lanes, so a warp writes 512 contiguous bytes per block. The threads also zero the K split's
// tile counters (after the wait: the previous call's kernel may still be counting in this memory).
__global__ void pack_prefill_activations_kernel(const std::uint16_t* activations, std::int64_t stride, int m, int k, int chunks,
                                                uint4* packed, std::int64_t threads, unsigned* tile_counters, std::int64_t counters) {
  allow_dependent_launch();
  wait_for_prior_grids();  // the activations are the previous kernel's output
  const std::int64_t index = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  for (std::int64_t counter = index; counter < counters; counter += threads) tile_counters[counter] = 0;
  if (index >= threads) return;
  const int lane = int(index % 32), t = lane % 4;
  const std::int64_t chunk = index / 32 % chunks, group = index / 32 / chunks;
  const std::int64_t row = group * kPrefillGroupRows + lane / 4;
  const std::int64_t column = chunk * kChunkK + 16 * t;
  const auto load_row = [&](std::int64_t r, std::uint32_t (&words)[8]) {
    uint4 halves[2] = {make_uint4(0, 0, 0, 0), make_uint4(0, 0, 0, 0)};
    if (r < m && column < k) {  // K is a multiple of 16: all 16 columns or none
      const uint4* source = reinterpret_cast<const uint4*>(activations + r * stride + column);
      halves[0] = source[0];
      halves[1] = source[1];
    }
    words[0] = halves[0].x, words[1] = halves[0].y, words[2] = halves[0].z, words[3] = halves[0].w;
    words[4] = halves[1].x, words[5] = halves[1].y, words[6] = halves[1].z, words[7] = halves[1].w;
  };
  std::uint32_t low[8], high[8];  // word i: columns 16t + 2i, 16t + 2i + 1 of rows g and g + 8
  load_row(row, low);
  load_row(row + 8, high);
  uint4* const out = packed + (group * chunks + chunk) * (kPrefillGroupChunkBytes / 16) + lane;
#pragma unroll
  for (int block = 0; block < kBlocksPerChunk; ++block) {
    out[block * 32] = make_uint4(low[2 * block], high[2 * block], low[2 * block + 1], high[2 * block + 1]);
  }
}

}  // namespace

cudaError_t launch_pack_prefill_activations(const std::uint16_t* activations, std::int64_t stride, int m, int k, int chunks, void* packed,
                                            unsigned* tile_counters, std::int64_t counters, bool programmatic, cudaStream_t stream) {
  if (reinterpret_cast<std::uintptr_t>(activations) % 16 != 0 || stride % 8 != 0) return cudaErrorMisalignedAddress;
  constexpr int kThreads = 256;
  const std::int64_t threads = prefill_packed_groups(m) * chunks * 32;
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(unsigned((threads + kThreads - 1) / kThreads));
  config.blockDim = dim3(kThreads);
  config.stream = stream;
  cudaLaunchAttribute attribute = programmatic_launch_attribute(programmatic);
  config.attrs = &attribute;
  config.numAttrs = 1;
  return cudaLaunchKernelEx(&config, pack_prefill_activations_kernel, activations, stride, m, k, chunks, static_cast<uint4*>(packed),
                            threads, tile_counters, counters);
}

}  // namespace fp4gemm::cuda_nvfp4
