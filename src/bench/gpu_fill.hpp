#pragma once
// Random device data for the GPU benchmark, generated on the GPU (a host generator would take
// seconds for the 8192^3 ceiling operands). Values are reproducible from the seed.
#include <cuda_runtime_api.h>

#include <cstdint>

namespace fp4gemm::bench {

// BF16 bit patterns of values uniform in [-1, 1).
void fill_random_bf16(std::uint16_t* out, std::int64_t count, std::uint64_t seed, cudaStream_t stream);
// E4M3 bytes of values uniform in [-1, 1) (never NaN).
void fill_random_e4m3(std::uint8_t* out, std::int64_t count, std::uint64_t seed, cudaStream_t stream);

}  // namespace fp4gemm::bench
