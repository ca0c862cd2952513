#include "backends/cuda_nvfp4/wgmma_small_m/sm90_nvfp4_wgmma_pack.hpp"

#include <cstdint>

#include "backends/cuda_common/programmatic_launch.cuh"

namespace fp4gemm::cuda_nvfp4 {
namespace {

// One thread per (token block, chunk, token, lane block): 16 consecutive activation columns in (two 16-byte
// loads: the launcher stages rows that are not 16-byte aligned, cuda_nvfp4_backend_cuda.cpp),
// eight 4-byte pairs out. Threads run fastest over the lane block and then the token, so a warp's
// eight tokens x four lane blocks write whole 128-byte core-matrix rows for each (block, k-half).
__global__ void pack_activations_kernel(const std::uint16_t* activations, std::int64_t stride, int m, int k, int tokens,
                                        int chunks, std::uint32_t* packed, unsigned* flags, int flag_count) {
  allow_dependent_launch();
  wait_for_prior_grids();  // the activations are the previous kernel's output
  const std::int64_t index = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  for (std::int64_t flag = index; flag < flag_count; flag += std::int64_t(gridDim.x) * blockDim.x) flags[flag] = 0;
  const int token_blocks = (m + tokens - 1) / tokens;
  if (index >= std::int64_t(token_blocks) * chunks * tokens * 4) return;
  const int lane_block = int(index % 4);
  const int token = int(index / 4 % tokens);
  const std::int64_t block_chunk = index / (4 * std::int64_t(tokens));  // token block * chunks + chunk
  const int chunk = int(block_chunk % chunks);
  const std::int64_t row = block_chunk / chunks * tokens + token;
  const std::int64_t column = std::int64_t(chunk) * kChunkK + 16 * lane_block;
  uint4 halves[2] = {make_uint4(0, 0, 0, 0), make_uint4(0, 0, 0, 0)};
  if (row < m && column < k) {  // K is a multiple of 16: all 16 columns or none
    const uint4* source = reinterpret_cast<const uint4*>(activations + row * stride + column);
    halves[0] = source[0];
    halves[1] = source[1];
  }
  // Word `pair` holds columns 2 pair (low half) and 2 pair + 1 of the 16.
  const std::uint32_t words[8] = {halves[0].x, halves[0].y, halves[0].z, halves[0].w,
                                  halves[1].x, halves[1].y, halves[1].z, halves[1].w};
  std::uint32_t* chunk_base = packed + block_chunk * (packed_chunk_bytes(tokens) / 4);
#pragma unroll
  for (int pair = 0; pair < 8; ++pair) {
    const int local = 16 * lane_block + 2 * pair;  // even column: the pair (local, local + 1) stays adjacent
    chunk_base[packed_offset(tokens, token, local) / 4] = words[pair];
  }
}

}  // namespace

cudaError_t launch_pack_activations(const std::uint16_t* activations, std::int64_t stride, int m, int k, int tokens,
                                    int chunks, void* packed, unsigned* flags, int flag_count, bool programmatic, cudaStream_t stream) {
  // The kernel's 16-byte loads need what the launcher's staging guarantees; a caller that skipped
  // it gets an error, not a misaligned access.
  if (reinterpret_cast<std::uintptr_t>(activations) % 16 != 0 || stride % 8 != 0) return cudaErrorMisalignedAddress;
  constexpr int kThreads = 256;
  const std::int64_t threads = (std::int64_t(m) + tokens - 1) / tokens * chunks * tokens * 4;
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(unsigned((threads + kThreads - 1) / kThreads));
  config.blockDim = dim3(kThreads);
  config.stream = stream;
  cudaLaunchAttribute attribute = programmatic_launch_attribute(programmatic);
  config.attrs = &attribute;
  config.numAttrs = 1;
  return cudaLaunchKernelEx(&config, pack_activations_kernel, activations, stride, m, k, tokens, chunks,
                            static_cast<std::uint32_t*>(packed), flags, flag_count);
}

}  // namespace fp4gemm::cuda_nvfp4
