// The stacked experts' codes moved into fragment order once, at prepare (cuda_moe_code_order.hpp).
#include <algorithm>

#include "backends/cuda_common/cuda_check.hpp"
#include "moe/cuda_moe/cuda_moe_code_order.hpp"
#include "moe/cuda_moe/cuda_moe_kernels.hpp"

namespace fp4gemm::moe::cuda_moe {
namespace {

__global__ void to_fragment_order_kernel(std::uint32_t* __restrict__ words, std::int64_t count) {
  const std::int64_t stride = std::int64_t(gridDim.x) * blockDim.x;
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
    words[i] = to_fragment_order(words[i]);
  }
}

}  // namespace

void launch_to_fragment_order(std::uint8_t* codes, std::int64_t words, cudaStream_t stream) {
  if (words == 0) return;
  constexpr std::int64_t kBlocks = 4096;  // a grid-stride loop: any count in one launch
  const auto blocks = unsigned(std::min(kBlocks, (words + kElementwiseThreads - 1) / kElementwiseThreads));
  to_fragment_order_kernel<<<blocks, kElementwiseThreads, 0, stream>>>(reinterpret_cast<std::uint32_t*>(codes), words);
  cuda::check_launch("cuda_moe: moving the expert codes into fragment order");
}

}  // namespace fp4gemm::moe::cuda_moe
