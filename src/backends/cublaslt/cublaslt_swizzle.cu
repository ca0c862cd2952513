// One thread per byte of the padded swizzled layout: decode the byte's (row, scale column) from the
// 128x4 tile formula and copy the linear scale there, or zero for padding.
#include "backends/cublaslt/cublaslt_swizzle.hpp"

#include <vector>

namespace fp4gemm::cublaslt {
namespace {

constexpr int kThreadsPerBlock = 256;
constexpr std::int64_t kTileBytes = 512;  // 128 rows x 4 scale columns

__global__ void swizzle_scales_kernel(const std::uint8_t* __restrict__ linear, std::uint8_t* __restrict__ swizzled,
                                      std::int64_t rows, std::int64_t scale_cols, std::int64_t column_tiles,
                                      std::int64_t total_bytes) {
  const std::int64_t offset = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (offset >= total_bytes) return;
  // offset = row_tile*(column_tiles*512) + column_tile*512 + (row%32)*16 + ((row%128)/32)*4 + column%4
  const std::int64_t tile = offset / kTileBytes;
  const std::int64_t within = offset % kTileBytes;
  const std::int64_t row = (tile / column_tiles) * 128 + ((within % 16) / 4) * 32 + within / 16;
  const std::int64_t column = (tile % column_tiles) * 4 + within % 4;
  swizzled[offset] = (row < rows && column < scale_cols) ? linear[row * scale_cols + column] : std::uint8_t(0);
}

// The virtual architectures this file was compiled for, e.g. {800, 900}.
std::vector<int> compiled_architectures() {
#ifdef __CUDA_ARCH_LIST__
  return {__CUDA_ARCH_LIST__};
#else
  return {};
#endif
}

}  // namespace

std::string missing_kernel_code_reason(const DeviceInfo& device) {
  const std::vector<int> architectures = compiled_architectures();
  std::string built_for;
  for (int architecture : architectures) built_for += (built_for.empty() ? "" : ", ") + std::to_string(architecture / 10);
  const std::string missing = "this binary holds no code for sm_" + std::to_string(device.sm()) +
                              " for its scale-swizzle kernel (built for compute " + built_for +
                              "); rebuild with that architecture in CMAKE_CUDA_ARCHITECTURES";
  if (device.probed) {
    int previous = 0;
    cudaGetDevice(&previous);
    cudaFuncAttributes attributes{};
    cudaError_t status = cudaSetDevice(device.index);
    if (status == cudaSuccess) status = cudaFuncGetAttributes(&attributes, swizzle_scales_kernel);
    cudaSetDevice(previous);
    if (status == cudaSuccess) return "";
    cudaGetLastError();  // not sticky: clear it so it is not blamed on a later call
    if (status == cudaErrorInvalidDeviceFunction || status == cudaErrorNoKernelImageForDevice) return missing;
    return std::string("could not ask the CUDA runtime about the swizzle kernel: ") + cudaGetErrorString(status);
  }
  // NOTE: a simulated GPU can run the kernel when some compiled architecture is at or below its SM:
  // the lowest one is built with its PTX (CMake's "80" = sm_80 code + compute_80 PTX), which the
  // driver JIT-compiles for newer GPUs.
  for (int architecture : architectures)
    if (architecture <= device.sm() * 10) return "";
  return missing;
}

cudaError_t swizzle_scales_on_device(const std::uint8_t* linear, std::uint8_t* swizzled, std::int64_t rows,
                                     std::int64_t cols, cudaStream_t stream) {
  const std::int64_t scale_cols = cols / 16;
  const std::int64_t column_tiles = (scale_cols + 3) / 4;
  const std::int64_t row_tiles = (rows + 127) / 128;
  const std::int64_t total_bytes = row_tiles * column_tiles * kTileBytes;
  if (total_bytes == 0) return cudaSuccess;
  const std::int64_t blocks = (total_bytes + kThreadsPerBlock - 1) / kThreadsPerBlock;
  swizzle_scales_kernel<<<unsigned(blocks), kThreadsPerBlock, 0, stream>>>(linear, swizzled, rows, scale_cols,
                                                                            column_tiles, total_bytes);
  return cudaGetLastError();
}

}  // namespace fp4gemm::cublaslt
