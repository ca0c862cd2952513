#pragma once
// Hopper (sm_90a) asynchronous primitives used by the wgmma kernel: mbarriers, 1-D bulk copies
// (cp.async.bulk, the TMA engine without a tensor map) and warpgroup MMAs with A in registers.
// Only meaningful when compiled for sm_90a (FP4GEMM_SM90A_DEVICE); the host never launches code
// that uses them on other GPUs.
#include <cstdint>

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900 && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define FP4GEMM_SM90A_DEVICE 1
#else
#define FP4GEMM_SM90A_DEVICE 0
#endif

namespace fp4gemm::cuda_nvfp4 {

__device__ __forceinline__ std::uint32_t shared_address(const void* pointer) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(pointer));
}

#if FP4GEMM_SM90A_DEVICE

__device__ __forceinline__ void mbarrier_init(std::uint64_t* barrier, unsigned arrivals) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(shared_address(barrier)), "r"(arrivals) : "memory");
}
// Makes barrier initialisation visible to the async proxy (the bulk-copy engine) and the cluster.
__device__ __forceinline__ void fence_barrier_init() { asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory"); }

__device__ __forceinline__ void mbarrier_arrive_expect_bytes(std::uint32_t barrier_address, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(barrier_address), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbarrier_arrive_expect_bytes(std::uint64_t* barrier, unsigned bytes) {
  mbarrier_arrive_expect_bytes(shared_address(barrier), bytes);
}
// The barrier forms taking a shared-memory address (shared_address) let a loop keep the address in
// a register instead of converting a pointer in every iteration.
__device__ __forceinline__ void mbarrier_arrive(std::uint32_t barrier_address) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(barrier_address) : "memory");
}
__device__ __forceinline__ void mbarrier_arrive(std::uint64_t* barrier) { mbarrier_arrive(shared_address(barrier)); }
// Waits until the phase of parity `parity` has completed (a fresh barrier counts parity 1 as done).
__device__ __forceinline__ void mbarrier_wait(std::uint32_t barrier_address, unsigned parity) {
  asm volatile(
      "{\n.reg .pred done;\nwait_again:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra wait_again;\n}\n" ::"r"(barrier_address),
      "r"(parity)
      : "memory");
}
__device__ __forceinline__ void mbarrier_wait(std::uint64_t* barrier, unsigned parity) { mbarrier_wait(shared_address(barrier), parity); }

// Loads from this CTA's shared memory at a shared_address. Volatile, so that they stay after the
// barrier wait that makes the data valid and before the arrive that hands the stage back.
__device__ __forceinline__ uint4 load_shared_16(std::uint32_t address) {
  uint4 value;
  asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(value.x), "=r"(value.y), "=r"(value.z), "=r"(value.w) : "r"(address));
  return value;
}
__device__ __forceinline__ std::uint32_t load_shared_4(std::uint32_t address) {
  std::uint32_t value;
  asm volatile("ld.shared.u32 %0, [%1];" : "=r"(value) : "r"(address));
  return value;
}
__device__ __forceinline__ std::uint32_t load_shared_2(std::uint32_t address) {
  std::uint16_t value;
  asm volatile("ld.shared.u16 %0, [%1];" : "=h"(value) : "r"(address));
  return value;
}
__device__ __forceinline__ uint2 load_shared_8(std::uint32_t address) {
  uint2 value;
  asm volatile("ld.shared.v2.u32 {%0, %1}, [%2];" : "=r"(value.x), "=r"(value.y) : "r"(address));
  return value;
}
__device__ __forceinline__ std::uint32_t load_shared_1(std::uint32_t address) {
  std::uint32_t value;
  asm volatile("ld.shared.u8 %0, [%1];" : "=r"(value) : "r"(address));
  return value;
}

// A barrier among the first `threads` threads of the CTA (a multiple of 32) on hardware barrier
// `id` (1-15; 0 is __syncthreads'), leaving the other warps running.
__device__ __forceinline__ void named_barrier_sync(unsigned id, unsigned threads) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

// `bytes` (a multiple of 16, both addresses 16-byte aligned) from global to this CTA's shared
// memory; completion is counted on `barrier` as transferred bytes.
__device__ __forceinline__ void bulk_copy_to_shared(std::uint32_t destination_address, const void* source, unsigned bytes,
                                                    std::uint32_t barrier_address) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(destination_address),
               "l"(source), "r"(bytes), "r"(barrier_address)
               : "memory");
}
__device__ __forceinline__ void bulk_copy_to_shared(void* destination, const void* source, unsigned bytes,
                                                    std::uint64_t* barrier) {
  bulk_copy_to_shared(shared_address(destination), source, bytes, shared_address(barrier));
}

// Per-thread asynchronous copies (cp.async) of 16 bytes (both addresses 16-byte aligned; through L2
// only) or 4 bytes (4-byte aligned) from global to this CTA's shared memory, for rows too scattered
// for one bulk copy; then an arrival on `barrier_address` once all of this thread's earlier copies
// have landed, counted as one of the barrier's expected arrivals (.noinc).
__device__ __forceinline__ void copy_async_16(std::uint32_t destination_address, const void* source) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(destination_address), "l"(source) : "memory");
}
__device__ __forceinline__ void copy_async_4(std::uint32_t destination_address, const void* source) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" ::"r"(destination_address), "l"(source) : "memory");
}
__device__ __forceinline__ void mbarrier_arrive_on_copies(std::uint32_t barrier_address) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];" ::"r"(barrier_address) : "memory");
}

// The same copy delivered to every CTA of the cluster in `cta_mask`, at the same shared-memory
// offset, each counting the bytes on its own barrier at `barrier`'s offset.
__device__ __forceinline__ void bulk_copy_to_cluster(std::uint32_t destination_address, const void* source, unsigned bytes,
                                                     std::uint32_t barrier_address, std::uint16_t cta_mask) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1], %2, [%3], %4;" ::"r"(
          destination_address),
      "l"(source), "r"(bytes), "r"(barrier_address), "h"(cta_mask)
      : "memory");
}

// Arrives on the barrier at `barrier`'s offset in the shared memory of cluster CTA `cta_rank`.
__device__ __forceinline__ void mbarrier_arrive_in_cta(std::uint64_t* barrier, unsigned cta_rank) {
  asm volatile(
      "{\n.reg .b32 remote;\nmapa.shared::cluster.u32 remote, %0, %1;\n"
      "mbarrier.arrive.release.cluster.shared::cluster.b64 _, [remote];\n}\n" ::"r"(shared_address(barrier)),
      "r"(cta_rank)
      : "memory");
}

// Four floats at `address`'s offset (16-byte aligned) in the shared memory of cluster CTA `cta_rank`
// (an explicit shared::cluster load: through a generic pointer it would wait for every earlier
// generic store of the thread).
__device__ __forceinline__ float4 load_float4_in_cta(std::uint32_t address, unsigned cta_rank) {
  float4 value;
  asm volatile(
      "{\n.reg .b32 remote;\nmapa.shared::cluster.u32 remote, %4, %5;\n"
      "ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [remote];\n}\n"
      : "=f"(value.x), "=f"(value.y), "=f"(value.z), "=f"(value.w)
      : "r"(address), "r"(cta_rank)
      : "memory");
  return value;
}

// The two halves of a cluster barrier, so that work can go between them: arrive orders this
// thread's earlier memory accesses before the others' wait returns; wait returns once every thread
// of the cluster has arrived. Every thread of each warp executes both (.aligned).
__device__ __forceinline__ void cluster_arrive_release() { asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory"); }
__device__ __forceinline__ void cluster_wait() { asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory"); }

// A flag in global memory that other CTAs of the grid read: `store_release_gpu` makes every write
// this thread has seen (its own, and the CTA's ordered before it by a barrier) visible before the
// flag; `load_acquire_gpu` orders the reader's later loads after it.
__device__ __forceinline__ void store_release_gpu(unsigned* flag, unsigned value) {
  asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(flag), "r"(value) : "memory");
}
__device__ __forceinline__ unsigned load_acquire_gpu(const unsigned* flag) {
  unsigned value;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(value) : "l"(flag) : "memory");
  return value;
}

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int kPending>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(kPending) : "memory");
}

// Keeps a register that an in-flight wgmma reads or writes from being reused or moved by the
// compiler across this point (the asm looks like it reads and rewrites it).
__device__ __forceinline__ void pin_register(std::uint32_t& value) { asm volatile("" : "+r"(value)::"memory"); }
__device__ __forceinline__ void pin_register(float& value) { asm volatile("" : "+f"(value)::"memory"); }

// Shared-memory matrix descriptor, no swizzle (K-major "interleaved" core matrices of 8 rows x 16
// bytes stored as 128 contiguous bytes): leading byte offset = distance between core matrices
// along K, stride byte offset = distance between core matrices along N. Fields are in 16-byte units.
// The low word holds the start address and the leading byte offset; the high word only the stride
// byte offset, a compile-time constant here (kDescriptorHigh), so the wgmma wrappers below take the
// low word alone and OR in the high one as an immediate: no per-wgmma arithmetic on it (ptxas still
// moves both words to uniform registers with R2UR). A CTA's
// shared memory lies below 2^18 bytes, so adding (bytes >> 4) to a low word moves its address
// without touching the other field.
template <std::uint32_t kKStepBytes>
__device__ __forceinline__ std::uint32_t shared_matrix_descriptor_low(std::uint32_t address) {
  return ((address & 0x3FFFF) >> 4) | ((kKStepBytes >> 4) << 16);
}
template <std::uint32_t kNStepBytes>
inline constexpr std::uint64_t kDescriptorHigh = std::uint64_t(kNStepBytes >> 4) << 32;

// D(64 x 16) += A(64 x 16, registers) * B(16 x 16, shared memory, K-major).
template <std::uint64_t kHigh>
__device__ __forceinline__ void wgmma_m64n16k16(float (&d)[8], const std::uint32_t (&a)[4], std::uint32_t b_descriptor_low) {
  asm volatile(
      "{\n.reg .pred accumulate;\n.reg .b64 descriptor;\nsetp.ne.b32 accumulate, %14, 0;\n"
      "cvt.u64.u32 descriptor, %12;\nor.b64 descriptor, descriptor, %13;\n"
      "wgmma.mma_async.sync.aligned.m64n16k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7}, {%8, %9, %10, %11}, descriptor, accumulate, 1, 1, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b_descriptor_low), "n"(kHigh), "r"(1));
}

// D(64 x 32) += A(64 x 16, registers) * B(16 x 32, shared memory, K-major).
template <std::uint64_t kHigh>
__device__ __forceinline__ void wgmma_m64n32k16(float (&d)[16], const std::uint32_t (&a)[4], std::uint32_t b_descriptor_low) {
  asm volatile(
      "{\n.reg .pred accumulate;\n.reg .b64 descriptor;\nsetp.ne.b32 accumulate, %22, 0;\n"
      "cvt.u64.u32 descriptor, %20;\nor.b64 descriptor, descriptor, %21;\n"
      "wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, {%16, %17, %18, %19}, descriptor, accumulate, 1, 1, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b_descriptor_low), "n"(kHigh), "r"(1));
}

// D(64 x 64) += A(64 x 16, registers) * B(16 x 64, shared memory, K-major).
template <std::uint64_t kHigh>
__device__ __forceinline__ void wgmma_m64n64k16(float (&d)[32], const std::uint32_t (&a)[4], std::uint32_t b_descriptor_low) {
  asm volatile(
      "{\n.reg .pred accumulate;\n.reg .b64 descriptor;\nsetp.ne.b32 accumulate, %38, 0;\n"
      "cvt.u64.u32 descriptor, %36;\nor.b64 descriptor, descriptor, %37;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, {%32, %33, %34, %35}, descriptor, accumulate, 1, 1, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b_descriptor_low), "n"(kHigh), "r"(1));
}

// D(64 x 128) += A(64 x 16, registers) * B(16 x 128, shared memory, K-major): the prefill kernel's
// wgmma (sm90_nvfp4_prefill_gemm.cu), whose A is 64 activation rows and B 128 decoded weight rows.
template <std::uint64_t kHigh>
__device__ __forceinline__ void wgmma_m64n128k16(float (&d)[64], const std::uint32_t (&a)[4], std::uint32_t b_descriptor_low) {
  asm volatile(
      "{\n.reg .pred accumulate;\n.reg .b64 descriptor;\nsetp.ne.b32 accumulate, %70, 0;\n"
      "cvt.u64.u32 descriptor, %68;\nor.b64 descriptor, descriptor, %69;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, {%64, %65, %66, %67}, descriptor, accumulate, 1, 1, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b_descriptor_low), "n"(kHigh), "r"(1));
}

// D(64 x 256) += A(64 x 16, registers) * B(16 x 256, shared memory, K-major): the wide prefill
// kernel's wgmma (sm90_nvfp4_wide_gemm.cu), whose A is 64 decoded weight rows and B 256 activation rows.
template <std::uint64_t kHigh>
__device__ __forceinline__ void wgmma_m64n256k16(float (&d)[128], const std::uint32_t (&a)[4], std::uint32_t b_descriptor_low) {
  asm volatile(
      "{\n.reg .pred accumulate;\n.reg .b64 descriptor;\nsetp.ne.b32 accumulate, %134, 0;\n"
      "cvt.u64.u32 descriptor, %132;\nor.b64 descriptor, descriptor, %133;\n"
      "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, {%128, %129, %130, %131}, descriptor, accumulate, 1, 1, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b_descriptor_low), "n"(kHigh), "r"(1));
}

// wgmma_m64nTk16 for T = kTokens activation rows.
template <int kTokens, std::uint64_t kHigh>
__device__ __forceinline__ void wgmma_k16(float (&d)[kTokens / 2], const std::uint32_t (&a)[4], std::uint32_t b_descriptor_low) {
  if constexpr (kTokens == 16) wgmma_m64n16k16<kHigh>(d, a, b_descriptor_low);
  if constexpr (kTokens == 32) wgmma_m64n32k16<kHigh>(d, a, b_descriptor_low);
  if constexpr (kTokens == 64) wgmma_m64n64k16<kHigh>(d, a, b_descriptor_low);
  if constexpr (kTokens == 128) wgmma_m64n128k16<kHigh>(d, a, b_descriptor_low);
  if constexpr (kTokens == 256) wgmma_m64n256k16<kHigh>(d, a, b_descriptor_low);
}

// Makes this thread's generic-proxy writes to shared memory (stmatrix, st.shared) visible to the
// async proxy (wgmma operands) before the barrier arrival that publishes them.
__device__ __forceinline__ void fence_proxy_async_shared() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }

// Stores four 8x8 BF16 matrices, register i of every lane holding matrix i in the mma A fragment
// layout (lane l: row l / 4, columns 2 (l % 4) and 2 (l % 4) + 1); lanes 8i .. 8i + 7 give the
// shared addresses of matrix i's eight 16-byte rows.
__device__ __forceinline__ void store_matrix_x4(std::uint32_t row_address, const std::uint32_t (&registers)[4]) {
  asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};" ::"r"(row_address), "r"(registers[0]),
               "r"(registers[1]), "r"(registers[2]), "r"(registers[3])
               : "memory");
}

#endif  // FP4GEMM_SM90A_DEVICE

}  // namespace fp4gemm::cuda_nvfp4
