// Session 19 microbenchmark (not part of the library): how fast bulk copies (cp.async.bulk global
// -> shared, completed on an mbarrier: the cuda_decode wgmma kernel's ring) turn over a ring of
// shared-memory stages, against the bytes a stage, the copies a stage is cut into, the stages, the
// rings a CTA runs side by side, the CTAs per SM, where the bytes come from (HBM: each ring
// streams its own region of a 4 GiB buffer, like the weights; L2: every ring rereads one 64 KiB
// region, like the packed activations) and how the consumer waits (try_wait, which may suspend
// the thread, or a test_wait spin). Each ring: one producer lane issues the copies, one consumer
// lane waits on each stage's full barrier and releases it at once (no decode, no MMA).
// The consumer lanes time themselves with clock64 and %globaltimer (after a warm-up of 64
// stages), so cycles are the SM's own. One JSON line per configuration.
// Build: nvcc -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a -o bulk_copy_rate bulk_copy_rate.cu
#include <cstdint>
#include <cstdio>
#include <vector>
#include <cuda_runtime.h>

constexpr int kMaxStages = 32;
constexpr int kMaxRings = 4;
constexpr int kWarmup = 64;

__device__ __forceinline__ uint32_t smem(const void* p) { return uint32_t(__cvta_generic_to_shared(p)); }
__device__ __forceinline__ void wait_parity(uint32_t bar, uint32_t parity, bool spin) {
  if (spin) {
    asm volatile(
        "{ .reg .pred p; W: mbarrier.test_wait.parity.shared::cta.b64 p, [%0], %1; @!p bra W; }" ::"r"(bar), "r"(parity)
        : "memory");
  } else {
    asm volatile(
        "{ .reg .pred p; W: mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1; @!p bra W; }" ::"r"(bar), "r"(parity)
        : "memory");
  }
}
__device__ __forceinline__ uint64_t global_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
__device__ __forceinline__ void bulk_copy(uint32_t destination, const void* source, int bytes, uint32_t barrier) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(destination),
               "l"(source), "r"(bytes), "r"(barrier)
               : "memory");
}

struct Args {
  const uint8_t* source;
  uint64_t region_bytes;  // per ring (HBM) or shared (L2)
  bool l2;
  int stage_bytes, copies, stages, l2_bytes, rounds, rings;
  bool spin;
  uint64_t* timing;  // per CTA and ring: cycles, ns
};

__global__ void __launch_bounds__(64 * kMaxRings) ring(const Args a) {
  extern __shared__ __align__(128) uint8_t buffer[];
  __shared__ __align__(8) uint64_t full[kMaxRings][kMaxStages], empty[kMaxRings][kMaxStages];
  const int r = threadIdx.x / 64, role = threadIdx.x % 64;
  if (threadIdx.x == 0) {
    for (int q = 0; q < a.rings; ++q)
      for (int s = 0; s < a.stages; ++s) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem(&full[q][s])));
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem(&empty[q][s])));
      }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  if (r >= a.rings) return;
  const int stride = a.stage_bytes + a.l2_bytes;
  uint8_t* ring_buffer = buffer + r * a.stages * stride;
  const int copy_bytes = a.stage_bytes / a.copies;
  const int total = kWarmup + a.rounds;
  if (role == 0) {  // producer
    const uint64_t ring_index = uint64_t(blockIdx.x) * a.rings + r;
    const uint8_t* base = a.l2 ? a.source : a.source + ring_index * a.region_bytes;
    uint64_t offset = 0;
    for (int i = 0; i < total; ++i) {
      const int s = i % a.stages;
      if (i >= a.stages) wait_parity(smem(&empty[r][s]), ((i / a.stages) - 1) & 1, a.spin);
      const uint32_t bar = smem(&full[r][s]);
      asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(a.stage_bytes + a.l2_bytes) : "memory");
      for (int c = 0; c < a.copies; ++c) {
        bulk_copy(smem(ring_buffer + s * stride + c * copy_bytes), base + offset, copy_bytes, bar);
        offset += copy_bytes;
        if (offset + copy_bytes > a.region_bytes) offset = 0;
      }
      if (a.l2_bytes > 0) bulk_copy(smem(ring_buffer + s * stride + a.stage_bytes), a.source + (i % 8) * a.l2_bytes, a.l2_bytes, bar);
    }
  } else if (role == 32) {  // consumer
    uint64_t c0 = 0, t0 = 0;
    for (int i = 0; i < total; ++i) {
      if (i == kWarmup) c0 = clock64(), t0 = global_ns();
      const int s = i % a.stages;
      wait_parity(smem(&full[r][s]), (i / a.stages) & 1, a.spin);
      asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem(&empty[r][s])) : "memory");
    }
    const uint64_t index = (uint64_t(blockIdx.x) * a.rings + r) * 2;
    a.timing[index] = clock64() - c0;
    a.timing[index + 1] = global_ns() - t0;
  }
}


// The wgmma kernel's ring as it is (sm90_wgmma_gemm.cu), decode and MMA left out: producer warp 0
// lane 0 copies a stage's codes (4096 B) and scales (512 B) from HBM in two copies, producer warp 1
// lane 0 its activations from L2 in one; both arrive with their bytes on the stage's full barrier
// (count 2). `consumer_warps` warps wait on it and release the stage with one arrival per lane
// (`all_lanes`, the kernel's way) or one per CTA (lane 0 of consumer warp 0 only).
__global__ void __launch_bounds__(64 + 32 * 8) kernel_ring(const Args a, int consumer_warps, bool all_lanes) {
  extern __shared__ __align__(128) uint8_t buffer[];
  __shared__ __align__(8) uint64_t full[kMaxStages], empty[kMaxStages];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int consumers = all_lanes ? 32 * consumer_warps : 1;
  if (threadIdx.x == 0) {
    for (int s = 0; s < a.stages; ++s) {
      asm volatile("mbarrier.init.shared::cta.b64 [%0], 2;" ::"r"(smem(&full[s])));
      asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem(&empty[s])), "r"(consumers));
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  const int stride = 4608 + a.l2_bytes;
  const int total = kWarmup + a.rounds;
  if (warp >= consumer_warps) {
    if (lane != 0) return;
    const bool weights = warp == consumer_warps;
    const uint8_t* base = a.source + uint64_t(blockIdx.x) * a.region_bytes;
    uint64_t offset = 0;
    for (int i = 0; i < total; ++i) {
      const int s = i % a.stages;
      if (i >= a.stages) wait_parity(smem(&empty[s]), ((i / a.stages) - 1) & 1, false);
      const uint32_t bar = smem(&full[s]);
      if (weights) {
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(4608) : "memory");
        bulk_copy(smem(buffer + s * stride), base + offset, 4096, bar);
        bulk_copy(smem(buffer + s * stride + 4096), base + offset + 4096, 512, bar);
        offset += 4608;
        if (offset + 4608 > a.region_bytes) offset = 0;
      } else {
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(a.l2_bytes) : "memory");
        bulk_copy(smem(buffer + s * stride + 4608), a.source + (i % 8) * a.l2_bytes, a.l2_bytes, bar);
      }
    }
  } else {
    uint64_t c0 = 0, t0 = 0;
    const bool arrives = all_lanes || threadIdx.x == 0;
    if (!arrives) return;
    for (int i = 0; i < total; ++i) {
      if (i == kWarmup) c0 = clock64(), t0 = global_ns();
      const int s = i % a.stages;
      wait_parity(smem(&full[s]), (i / a.stages) & 1, false);
      asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem(&empty[s])) : "memory");
    }
    if (threadIdx.x == 0) {
      a.timing[2 * blockIdx.x] = clock64() - c0;
      a.timing[2 * blockIdx.x + 1] = global_ns() - t0;
    }
  }
}

int main() {
  cudaDeviceProp prop;
  cudaGetDeviceProperties(&prop, 0);
  const int sms = prop.multiProcessorCount;
  const uint64_t total_bytes = 4ull << 30;
  uint8_t* source = nullptr;
  uint64_t* timing = nullptr;
  if (cudaMalloc(&source, total_bytes) != cudaSuccess || cudaMalloc(&timing, 2 * 8 * 1024 * sizeof(uint64_t)) != cudaSuccess) return 1;
  cudaMemset(source, 1, total_bytes);
  const int max_dynamic = int(prop.sharedMemPerBlockOptin) - int(2 * kMaxRings * kMaxStages * 8);
  if (cudaFuncSetAttribute(ring, cudaFuncAttributeMaxDynamicSharedMemorySize, max_dynamic) != cudaSuccess) {
    printf("{\"error\":\"attribute\"}\n");
    return 1;
  }
  struct Config { int stage_bytes, copies, stages, rings, ctas_per_sm; bool l2; int l2_bytes; bool spin; };
  const Config configs[] = {
      // depth: 1 KB and 4.6 KB stages, 4-32 of them, one ring, one CTA per SM, HBM
      {1024, 1, 4, 1, 1, false, 0, false},  {1024, 1, 8, 1, 1, false, 0, false},  {1024, 1, 32, 1, 1, false, 0, false},
      {4608, 1, 8, 1, 1, false, 0, false},  {4608, 1, 16, 1, 1, false, 0, false}, {4608, 1, 32, 1, 1, false, 0, false},
      // the consumer spinning instead of try_wait
      {1024, 1, 8, 1, 1, false, 0, true},   {4608, 1, 16, 1, 1, false, 0, true},
      // L2 source
      {1024, 1, 8, 1, 1, true, 0, false},   {8192, 1, 8, 1, 1, true, 0, false},
      // rings side by side in one CTA, and CTAs per SM
      {1024, 1, 8, 2, 1, false, 0, false},  {1024, 1, 8, 4, 1, false, 0, false},  {4608, 1, 8, 2, 1, false, 0, false},
      {4608, 1, 8, 4, 1, false, 0, false},  {1024, 1, 8, 1, 2, false, 0, false},  {4608, 1, 8, 1, 2, false, 0, false},
      // bytes and copies a stage
      {8192, 1, 8, 1, 1, false, 0, false},  {16384, 1, 8, 1, 1, false, 0, false}, {8192, 4, 8, 1, 1, false, 0, false},
      {8192, 8, 8, 1, 1, false, 0, false},
      // the wgmma kernel's stage: codes + scales (two copies) from HBM, 64 or 32 tokens of activations from L2
      {4608, 2, 8, 1, 1, false, 8192, false}, {4608, 2, 16, 1, 1, false, 8192, false}, {4608, 2, 8, 1, 2, false, 8192, false},
      {4608, 2, 8, 1, 1, false, 4096, false}, {4608, 2, 8, 2, 1, false, 8192, false},
  };
  for (const Config& c : configs) {
    Args a{};
    a.source = source;
    a.l2 = c.l2;
    a.stage_bytes = c.stage_bytes;
    a.copies = c.copies;
    a.stages = c.stages;
    a.l2_bytes = c.l2_bytes;
    a.rounds = 1024;
    a.rings = c.rings;
    a.spin = c.spin;
    a.timing = timing;
    const int ctas = sms * c.ctas_per_sm;
    a.region_bytes = c.l2 ? 64 * 1024 : total_bytes / (uint64_t(ctas) * c.rings) / 128 * 128;
    const int shared_bytes = c.rings * c.stages * (c.stage_bytes + c.l2_bytes);
    if (shared_bytes > max_dynamic) { printf("{\"skipped\":\"%d bytes of shared memory\"}\n", shared_bytes); continue; }
    ring<<<ctas, 64 * c.rings, shared_bytes>>>(a);  // warm-up (clocks)
    ring<<<ctas, 64 * c.rings, shared_bytes>>>(a);
    const cudaError_t status = cudaDeviceSynchronize();
    if (status != cudaSuccess || cudaGetLastError() != cudaSuccess) {
      printf("{\"error\":\"%s\"}\n", cudaGetErrorString(status));
      return 1;
    }
    std::vector<uint64_t> t(2 * ctas * c.rings);
    cudaMemcpy(t.data(), timing, t.size() * sizeof(uint64_t), cudaMemcpyDeviceToHost);
    double cycles = 0, ns = 0;
    for (int i = 0; i < ctas * c.rings; ++i) cycles += double(t[2 * i]), ns += double(t[2 * i + 1]);
    cycles /= ctas * c.rings * double(a.rounds);
    ns /= ctas * c.rings * double(a.rounds);
    const double bytes = c.stage_bytes + c.l2_bytes;
    printf("{\"stage_bytes\":%d,\"l2_bytes\":%d,\"copies\":%d,\"stages\":%d,\"rings_per_cta\":%d,\"ctas_per_sm\":%d,\"source\":\"%s\","
           "\"wait\":\"%s\",\"cycles_per_stage_per_ring\":%.1f,\"ns_per_stage_per_ring\":%.1f,\"ghz\":%.3f,\"gbps_per_sm\":%.1f,"
           "\"tbps_total\":%.3f}\n",
           c.stage_bytes, c.l2_bytes, c.copies, c.stages, c.rings, c.ctas_per_sm, c.l2 ? "l2" : "hbm", c.spin ? "spin" : "try_wait",
           cycles, ns, cycles / ns, bytes * c.rings * c.ctas_per_sm / ns, bytes * c.rings * ctas / ns * 1e-3);
  }
  // The kernel's ring: 8 stages, 64 tokens of activations, 8 or 1 consumer warps, every lane or one releasing.
  cudaFuncSetAttribute(kernel_ring, cudaFuncAttributeMaxDynamicSharedMemorySize, max_dynamic);
  struct KernelConfig { int consumer_warps; bool all_lanes; int stages, l2_bytes, ctas_per_sm; };
  const KernelConfig kernel_configs[] = {{8, true, 8, 8192, 1}, {8, false, 8, 8192, 1}, {1, false, 8, 8192, 1}, {8, true, 16, 8192, 1},
                                         {8, true, 8, 8192, 2}, {8, true, 8, 4096, 1}};
  for (const KernelConfig& k : kernel_configs) {
    Args a{};
    a.source = source;
    a.stages = k.stages;
    a.l2_bytes = k.l2_bytes;
    a.rounds = 1024;
    a.timing = timing;
    const int ctas = sms * k.ctas_per_sm;
    a.region_bytes = total_bytes / uint64_t(ctas) / 128 * 128;
    const int shared_bytes = k.stages * (4608 + k.l2_bytes);
    const int threads = 64 + 32 * k.consumer_warps;
    kernel_ring<<<ctas, threads, shared_bytes>>>(a, k.consumer_warps, k.all_lanes);
    kernel_ring<<<ctas, threads, shared_bytes>>>(a, k.consumer_warps, k.all_lanes);
    const cudaError_t status = cudaDeviceSynchronize();
    if (status != cudaSuccess || cudaGetLastError() != cudaSuccess) {
      printf("{\"error\":\"%s\"}\n", cudaGetErrorString(status));
      return 1;
    }
    std::vector<uint64_t> t(2 * ctas);
    cudaMemcpy(t.data(), timing, t.size() * sizeof(uint64_t), cudaMemcpyDeviceToHost);
    double cycles = 0, ns = 0;
    for (int i = 0; i < ctas; ++i) cycles += double(t[2 * i]), ns += double(t[2 * i + 1]);
    cycles /= ctas * double(a.rounds);
    ns /= ctas * double(a.rounds);
    printf("{\"kernel_ring\":true,\"consumer_warps\":%d,\"all_lanes\":%s,\"stages\":%d,\"l2_bytes\":%d,\"ctas_per_sm\":%d,"
           "\"cycles_per_stage\":%.1f,\"ns_per_stage\":%.1f,\"ghz\":%.3f}\n",
           k.consumer_warps, k.all_lanes ? "true" : "false", k.stages, k.l2_bytes, k.ctas_per_sm, cycles, ns, cycles / ns);
  }
  return 0;
}
