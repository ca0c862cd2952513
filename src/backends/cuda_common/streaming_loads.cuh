#pragma once
// Loads of data read exactly once (weights streamed from HBM): kept out of L1, whose lines would
// only evict what is reused (activations, the scale table's neighbours).
#include <cuda_runtime.h>

#include <cstdint>

namespace fp4gemm {

__device__ __forceinline__ uint4 load_stream_16(const uint4* address) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(address));
  return v;
}
__device__ __forceinline__ uint2 load_stream_8(const uint2* address) {
  uint2 v;
  asm volatile("ld.global.nc.L1::no_allocate.v2.u32 {%0, %1}, [%2];" : "=r"(v.x), "=r"(v.y) : "l"(address));
  return v;
}
__device__ __forceinline__ std::uint32_t load_stream_2(const std::uint16_t* address) {
  unsigned short v;
  asm volatile("ld.global.nc.L1::no_allocate.u16 %0, [%1];" : "=h"(v) : "l"(address));
  return v;
}

}  // namespace fp4gemm
