#pragma once
// Per-thread asynchronous copies from global to shared memory (cp.async, SM 8.0 and newer): the
// bytes travel without passing through registers, so a warp can have many more of them in flight
// than its registers would hold. Completion is per thread: after cp_async_wait_all a thread sees
// its own copies; other threads' copies need a barrier among them as well (__syncwarp/__syncthreads).
#include <cuda_runtime.h>

#include <cstdint>

namespace fp4gemm {

// Shared-memory addresses are 32-bit (__cvta_generic_to_shared): they take one register, a
// pointer two.
__device__ __forceinline__ std::uint32_t shared_address_of(const void* pointer) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(pointer));
}

// 16 bytes (both addresses 16-byte aligned), kept out of L1: data read once.
__device__ __forceinline__ void cp_async_16(std::uint32_t shared_destination, const void* global_source) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(shared_destination), "l"(global_source) : "memory");
}

// 4 bytes (both addresses 4-byte aligned).
__device__ __forceinline__ void cp_async_4(std::uint32_t shared_destination, const void* global_source) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" ::"r"(shared_destination), "l"(global_source) : "memory");
}

// Closes the group of this thread's copies issued so far.
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }

// Waits until every copy this thread issued has landed in shared memory.
__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_all;" ::: "memory"); }

// Reads of what the copies left, at 32-bit shared-memory addresses.
__device__ __forceinline__ uint4 load_shared_16(std::uint32_t address) {
  uint4 v;
  asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "r"(address));
  return v;
}
__device__ __forceinline__ std::uint32_t load_shared_2(std::uint32_t address) {
  unsigned short v;
  asm volatile("ld.shared.u16 %0, [%1];" : "=h"(v) : "r"(address));
  return v;
}

}  // namespace fp4gemm
