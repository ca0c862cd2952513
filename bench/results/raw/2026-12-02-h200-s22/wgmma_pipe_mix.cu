// Session 22 microbenchmark (not part of the library): which instructions fail to overlap an
// in-flight wgmma? wgmma_alu_overlap.cu (call 4) found the kernel's decode (LOP3, IMAD, HFMA2)
// adding its full issue time to every chunk step, for RS and SS alike and whether or not ptxas
// interleaves it with the HGMMAs. Here each warpgroup issues 4 m64n64k16 SS wgmmas, commits,
// runs `passes` rounds of 48 instructions of ONE kind on 16 independent registers, and waits:
// lop (LOP3, ALU pipe), imad (IMAD, FMA pipe), hfma2 (BF16x2 FMA), ffma (FP32 FMA), decode (the
// kernel's mix). If one pipe's instructions overlap the wgmmas and another's do not, the decode
// should be written in the former.
// Build: nvcc -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a -o wgmma_pipe_mix wgmma_pipe_mix.cu
#include <cstdint>
#include <cstdio>
#include <type_traits>
#include <cuda_runtime.h>
#include "../2026-12-01-h200-s17/wgmma_ops.inc"

enum Op { kLop, kImad, kHfma2, kFfma };
__device__ __forceinline__ uint64_t desc(uint32_t addr) {
  return uint64_t((addr & 0x3FFFF) >> 4) | (uint64_t(128 >> 4) << 16) | (uint64_t(256 >> 4) << 32);
}
template <int kOp>
__device__ __forceinline__ void op(uint32_t& x, uint32_t a, uint32_t b) {
  if constexpr (kOp == kLop) asm volatile("lop3.b32 %0, %0, %1, %2, 0x96;" : "+r"(x) : "r"(a), "r"(b));
  if constexpr (kOp == kImad) asm volatile("mad.lo.u32 %0, %0, %1, %2;" : "+r"(x) : "r"(a), "r"(b));
  if constexpr (kOp == kHfma2) asm volatile("fma.rn.bf16x2 %0, %0, %1, %2;" : "+r"(x) : "r"(a), "r"(b));
  if constexpr (kOp == kFfma) {
    float f = __uint_as_float(x);
    asm volatile("fma.rn.f32 %0, %0, %1, %2;" : "+f"(f) : "f"(__uint_as_float(a)), "f"(__uint_as_float(b)));
    x = __float_as_uint(f);
  }
}

// kPingPong (two warpgroups): CUTLASS's "pingpong" order. Named barrier 1 + w is warpgroup w's
// turn to issue; a warpgroup issues its wgmmas, hands the turn to the other, then runs its ALU
// work, so that one warpgroup's ALU work runs while the other's wgmmas are in the pipe instead
// of both doing each at the same time.
__device__ __forceinline__ void named_sync(int id) { asm volatile("bar.sync %0, 256;" ::"r"(id) : "memory"); }
__device__ __forceinline__ void named_arrive(int id) { asm volatile("bar.arrive %0, 256;" ::"r"(id) : "memory"); }
template <int N>
__device__ __forceinline__ void ss(float (&d)[N / 2], uint64_t a, uint64_t b) {
  if constexpr (N == 64) ss_n64(d, a, b);
  if constexpr (N == 128) ss_n128(d, a, b);
  if constexpr (N == 256) ss_n256(d, a, b);
}
// N: the wgmma's width (64 = the decode kernels' token count at M = 33-64; 128 and 256 are what
// a prefill kernel would run), to see whether the ALU work's cost depends on it.
template <int kOp, int kPasses, bool kPingPong = false, int N = 64>
__global__ void mix_kernel(int chunks, float* sink, uint32_t seed) {
  extern __shared__ __align__(128) uint8_t smem[];
  for (int i = threadIdx.x; i < (N * 32 * 4 + 2048 * 4) / 4; i += blockDim.x) reinterpret_cast<uint32_t*>(smem)[i] = 0x3f803f80u * (i & 1);
  __syncthreads();
  const uint32_t base = uint32_t(__cvta_generic_to_shared(smem));
  const uint32_t a_base = base + N * 32 * 4;
  float d[N / 2];
#pragma unroll
  for (int i = 0; i < N / 2; ++i) d[i] = 0.0f;
  uint32_t regs[16];
#pragma unroll
  for (int i = 0; i < 16; ++i) regs[i] = 0x3f803f80u ^ (threadIdx.x * (i + 1)) ^ seed;
  const uint32_t ka = 0x3f803f81u ^ (threadIdx.x & 0x10000u), kb = 0x00010001u | (seed & 0x10000u);
  const int wg = threadIdx.x / 128;
  if (kPingPong && wg == 1) named_arrive(1);  // warpgroup 0 goes first
  for (int c = 0; c < chunks; ++c) {
    if constexpr (kPingPong) named_sync(1 + wg);
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
    for (int b = 0; b < 4; ++b) ss<N>(d, desc(a_base + b * 2048), desc(base + b * N * 32));
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
    if constexpr (kPingPong) {
      if (c + 1 < chunks || wg == 0) named_arrive(2 - wg);  // the other's turn (its last sync needs it)
    }
    // In ping-pong, the ALU work sits behind a branch on an opaque value (always taken) so that
    // ptxas cannot hoist it above the hand-over (it did, between the HGMMAs, without this).
    std::uint32_t gate = 1u;
    if constexpr (kPingPong) asm volatile("mov.b32 %0, %1;" : "=r"(gate) : "r"(seed));  // seed != 0
#pragma unroll
    for (int p = 0; p < kPasses && gate != 0u; ++p)
#pragma unroll
      for (int r = 0; r < 3; ++r)
#pragma unroll
        for (int i = 0; i < 16; ++i) op<kOp>(regs[i], ka, kb);
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
  }
  float s = 0;
  uint32_t x = 0;
#pragma unroll
  for (int i = 0; i < N / 2; ++i) s += d[i];
#pragma unroll
  for (int i = 0; i < 16; ++i) x ^= regs[i];
  if (s == 12345.0f || x == 0x12345u) sink[threadIdx.x] = s + float(x);
}

template <int kOp, int kPasses, bool kPingPong = false, int N = 64>
void measure(const char* name, int warpgroups, int sms, float* sink) {
  const int chunks = 4096, smem = N * 32 * 4 + 2048 * 4;
  auto kernel = mix_kernel<kOp, kPasses, kPingPong, N>;
  cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  kernel<<<sms, 128 * warpgroups, smem>>>(16, sink, 1u);
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0); cudaEventCreate(&e1);
  float best = 1e30f;
  for (int rep = 0; rep < 5; ++rep) {
    cudaEventRecord(e0);
    kernel<<<sms, 128 * warpgroups, smem>>>(chunks, sink, 1u + rep);
    cudaEventRecord(e1);
    cudaEventSynchronize(e1);
    float ms; cudaEventElapsedTime(&ms, e0, e1);
    if (ms < best) best = ms;
  }
  int clock_khz = 0; cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0);
  std::printf("{\"n\":%d,\"op\":\"%s\",\"passes\":%d,\"instructions_per_warp_per_step\":%d,\"warpgroups\":%d,\"cycles_per_step_per_sm_at_max_clock\":%.1f,"
              "\"pipe_cycles_per_step_at_36\":%d,\"status\":\"%s\"}\n",
              N, name, kPasses, 48 * kPasses, warpgroups, best * 1e-3 * clock_khz * 1e3 / chunks, 36 * (N / 64) * 4 * warpgroups,
              cudaGetErrorString(cudaGetLastError()));
}

template <int kOp>
void sweep(const char* name, int sms, float* sink) {
  for (int wg = 1; wg <= 2; ++wg) {
    measure<kOp, 1>(name, wg, sms, sink);
    measure<kOp, 2>(name, wg, sms, sink);
    measure<kOp, 4>(name, wg, sms, sink);
  }
}

int main(int argc, char**) {
  int sms = 0; cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  float* sink; cudaMalloc(&sink, 4096 * 4);
  // Wider wgmmas (call 7): is the ALU work still additive when each wgmma lasts 2-4x longer?
  for (int wg = 1; wg <= 2; ++wg) {
    measure<kLop, 0, false, 128>("none", wg, sms, sink);
    measure<kLop, 1, false, 128>("lop", wg, sms, sink);
    measure<kLop, 2, false, 128>("lop", wg, sms, sink);
    measure<kHfma2, 2, false, 128>("hfma2", wg, sms, sink);
    measure<kLop, 0, false, 256>("none", wg, sms, sink);
    measure<kLop, 1, false, 256>("lop", wg, sms, sink);
    measure<kLop, 2, false, 256>("lop", wg, sms, sink);
    measure<kLop, 4, false, 256>("lop", wg, sms, sink);
    measure<kHfma2, 2, false, 256>("hfma2", wg, sms, sink);
    measure<kLop, 0, false, 64>("none", wg, sms, sink);
    measure<kLop, 2, false, 64>("lop", wg, sms, sink);
  }
  if (argc < 2) return 0;
  // Ping-pong, two warpgroups, against the lock-step rows of the same run (call 6).
  measure<kLop, 0, true>("pingpong-none", 2, sms, sink);
  measure<kLop, 1, true>("pingpong-lop", 2, sms, sink);
  measure<kLop, 2, true>("pingpong-lop", 2, sms, sink);
  measure<kHfma2, 1, true>("pingpong-hfma2", 2, sms, sink);
  measure<kHfma2, 2, true>("pingpong-hfma2", 2, sms, sink);
  measure<kLop, 0>("none", 2, sms, sink);
  measure<kLop, 1>("lop", 2, sms, sink);
  measure<kLop, 2>("lop", 2, sms, sink);
  measure<kHfma2, 1>("hfma2", 2, sms, sink);
  measure<kHfma2, 2>("hfma2", 2, sms, sink);
  if (argc < 2) return 0;  // call 5's table only with an argument
  for (int wg = 1; wg <= 2; ++wg) measure<kLop, 0>("none", wg, sms, sink);
  sweep<kLop>("lop", sms, sink);
  sweep<kImad>("imad", sms, sink);
  sweep<kHfma2>("hfma2", sms, sink);
  sweep<kFfma>("ffma", sms, sink);
  return 0;
}
