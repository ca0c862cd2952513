// Microbenchmark (session 27): the compute floor of an mma.sync decode kernel with no memory
// traffic. Each warp repeats a "tile-chunk": 4 MMA blocks, each a 16x16 weight fragment decoded
// from one code word (the kernel's cuts and BF16x2 scale products) and multiplied by T activation
// tiles (mma.m16n8k16, BF16, FP32 accumulate). B fragments come from registers or from shared
// memory (one LDS.64 per tile and block, as a kernel with activations in shared memory would).
// Prints cycles per tile-chunk per SM for each (T, weight tiles per warp W, warps per SM, decode
// on/off, B source). Call 1 ran T = 1, 2, 4, 8 with W = 1; call 4 T = 3 and W = 2 at T = 1-4.
#include <cstdio>
#include <cstdint>
#include <cuda_runtime.h>
#include "backends/cuda_decode/decode_device.cuh"
using namespace fp4gemm::cuda_decode;

__device__ __forceinline__ void mma(float (&c)[4], const std::uint32_t (&a)[4], std::uint32_t b0, std::uint32_t b1) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3]) : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

template <int T, bool kDecode, bool kSharedB, int W = 1>
__global__ void bench(int iterations, std::uint32_t seed, float* sink) {
  __shared__ std::uint32_t table[256];
  __shared__ uint2 b_shared[8][4][32];  // [tile][block][lane]
  fill_scale_table(table, threadIdx.x, blockDim.x);
  for (int i = threadIdx.x; i < 8 * 4 * 32; i += blockDim.x) (&b_shared[0][0][0])[i] = make_uint2(seed * i, seed + i);
  __syncthreads();
  const int lane = threadIdx.x % 32;
  float acc[W][T][4] = {};
  std::uint32_t words[W][4];
  for (int w = 0; w < W; ++w) { words[w][0] = seed ^ lane ^ w; words[w][1] = seed * 3 + lane + w; words[w][2] = seed * 5 ^ lane; words[w][3] = seed * 7 + lane + 2 * w; }
  std::uint32_t scale_bytes = seed >> 8;
  std::uint32_t b[T][4][2];
#pragma unroll
  for (int t = 0; t < T; ++t)
    for (int k = 0; k < 4; ++k) b[t][k][0] = seed + t * 8 + k, b[t][k][1] = seed * (t + k);
  for (int it = 0; it < iterations; ++it) {
#pragma unroll
    for (int w = 0; w < W; ++w) {
      const RowScales scales = kDecode ? lookup_row_scales(scale_bytes + w, table) : RowScales{0x3f803f80u, 0x3f803f80u};
#pragma unroll
      for (int block = 0; block < 4; ++block) {
        std::uint32_t fragment[4];
        if (kDecode) {
          decode_fragment(words[w][block], scales, fragment);
        } else {
          fragment[0] = words[w][block]; fragment[1] = words[w][block] + 1; fragment[2] = words[w][block] + 2; fragment[3] = words[w][block] + 3;
        }
#pragma unroll
        for (int t = 0; t < T; ++t) {
          if (kSharedB) {
            const uint2 v = b_shared[t][block][lane];
            mma(acc[w][t], fragment, v.x, v.y);
          } else {
            mma(acc[w][t], fragment, b[t][block][0], b[t][block][1]);
          }
        }
      }
    }
    // New words each iteration (as new chunks would be), without memory.
#pragma unroll
    for (int w = 0; w < W; ++w)
      for (int block = 0; block < 4; ++block) words[w][block] = words[w][block] * 1664525u + 1013904223u;
    scale_bytes += 0x0101;
  }
  float total = 0;
#pragma unroll
  for (int w = 0; w < W; ++w)
    for (int t = 0; t < T; ++t) total += acc[w][t][0] + acc[w][t][1] + acc[w][t][2] + acc[w][t][3];
  if (total == 1.2345f) sink[0] = total;
}

template <int T, bool kDecode, bool kSharedB, int W = 1>
void run(int warps_per_cta, int ctas_per_sm, int sms, double clock_ghz, float* sink) {
  const int iterations = 4096;
  cudaEvent_t a, e;
  cudaEventCreate(&a); cudaEventCreate(&e);
  bench<T, kDecode, kSharedB, W><<<sms * ctas_per_sm, 32 * warps_per_cta>>>(16, 12345u, sink);  // warm
  float best = 1e30f;
  for (int rep = 0; rep < 5; ++rep) {
    cudaEventRecord(a);
    bench<T, kDecode, kSharedB, W><<<sms * ctas_per_sm, 32 * warps_per_cta>>>(iterations, 12345u + rep, sink);
    cudaEventRecord(e);
    cudaEventSynchronize(e);
    float ms; cudaEventElapsedTime(&ms, a, e);
    if (ms < best) best = ms;
  }
  const double tile_chunks_per_sm = double(iterations) * warps_per_cta * ctas_per_sm * W;
  const double cycles = best * 1e-3 * clock_ghz * 1e9;
  printf("T=%d W=%d decode=%d sharedB=%d warps/SM=%2d: %.1f cycles per tile-chunk per SM (%.2f per HMMA), err=%s\n", T, W, kDecode, kSharedB,
         warps_per_cta * ctas_per_sm, cycles / tile_chunks_per_sm, cycles / tile_chunks_per_sm / (4 * T),
         cudaGetErrorString(cudaGetLastError()));
  cudaEventDestroy(a); cudaEventDestroy(e);
}

template <int T>
void sweep(int sms, double ghz, float* sink) {
  for (int warps : {8, 12, 16, 24, 32}) {
    const int per_cta = 4, ctas = warps / per_cta;
    run<T, false, false>(per_cta, ctas, sms, ghz, sink);
    run<T, true, false>(per_cta, ctas, sms, ghz, sink);
    run<T, true, true>(per_cta, ctas, sms, ghz, sink);
  }
}

// Two weight tiles per warp (the rule's tile pairs at M <= 16): twice the independent work per warp.
template <int T>
void sweep_pairs(int sms, double ghz, float* sink) {
  for (int warps : {8, 12, 16, 24, 32}) {
    run<T, true, false, 2>(4, warps / 4, sms, ghz, sink);
  }
}

int main() {
  cudaDeviceProp prop; cudaGetDeviceProperties(&prop, 0);
  int clock_khz = 0; cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0);
  const double ghz = 1.98;  // the H200's held clock under load (session 22); the max clock is printed
  printf("%s, %d SMs, max clock %.2f GHz; cycles at %.2f GHz\n", prop.name, prop.multiProcessorCount, clock_khz / 1e6, ghz);
  float* sink; cudaMalloc(&sink, 4);
  sweep<3>(prop.multiProcessorCount, ghz, sink);
  sweep_pairs<1>(prop.multiProcessorCount, ghz, sink);
  sweep_pairs<2>(prop.multiProcessorCount, ghz, sink);
  sweep_pairs<3>(prop.multiProcessorCount, ghz, sink);
  sweep_pairs<4>(prop.multiProcessorCount, ghz, sink);
  return 0;
}
