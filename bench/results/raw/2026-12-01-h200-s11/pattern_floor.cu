// Session 11 experiment (not part of the library; kept as the record of
// bench/results/2026-12-01-h200-s11.md): read-only kernels that stream an NVFP4 weight's bytes the
// way cuda_decode's kernels do, without computing, to split the gap between the mma.sync kernel and
// the stream floor into "access pattern, bytes in flight, grid-dependency wait" and "the compute
// chain", and to time the wgmma kernel's 1-D bulk-copy path into shared memory on its own.
// Build: nvcc -O3 -std=c++17 -arch=sm_90a pattern_floor.cu -o pattern_floor
// Run:   ./pattern_floor callN   (N = 1..4: the runs of that device call; the raw/ files hold their output)
// Each line printed: kind, N x K, variant, microseconds per call (CUDA graph, PDL between calls,
// weights rotated past 2x L2, median of 15 replays), GB/s of the NVFP4 bytes.
// Note for "wait early" in call 2: ptxas hoisted griddepcontrol.wait above the loads in
// pattern_kernel (SASS), so those rows had no loads before the wait; staged_kernel's
// fence.mbarrier_init keeps them before it, so call 4's "staged 0" rows are the kernel's order.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#define CHECK(x)                                                                           \
  do {                                                                                     \
    cudaError_t e = (x);                                                                   \
    if (e != cudaSuccess) {                                                                \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e)); \
      std::exit(1);                                                                        \
    }                                                                                      \
  } while (0)

constexpr int kRecordBytes = 4608, kRecordCodeBytes = 4096, kTileCodeBytes = 512, kTileScaleBytes = 64;
constexpr unsigned kUnlikely = 0x9E3779B9u;

__device__ __forceinline__ uint4 ld16(const void* p) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
  return v;
}
__device__ __forceinline__ unsigned ld2(const void* p) {
  unsigned short v;
  asm volatile("ld.global.nc.L1::no_allocate.u16 %0, [%1];" : "=h"(v) : "l"(p));
  return v;
}
__device__ __forceinline__ void pdl_trigger() { asm volatile("griddepcontrol.launch_dependents;"); }
__device__ __forceinline__ void pdl_wait() { asm volatile("griddepcontrol.wait;" ::: "memory"); }

// 1. The stream floor: grid-strided, kLoads 16-byte loads in flight per thread.
template <int kLoads>
__global__ void __launch_bounds__(512) sequential_kernel(const uint4* data, std::int64_t count, unsigned* sink) {
  pdl_trigger();
  const std::int64_t threads = std::int64_t(gridDim.x) * blockDim.x;
  unsigned digest = 0;
  for (std::int64_t index = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; index < count; index += kLoads * threads) {
    uint4 w[kLoads];
#pragma unroll
    for (int l = 0; l < kLoads; ++l) {
      const std::int64_t at = index + l * threads;
      w[l] = at < count ? ld16(data + at) : make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int l = 0; l < kLoads; ++l) digest ^= w[l].x ^ w[l].y ^ w[l].z ^ w[l].w;
  }
  pdl_wait();
  if (digest == kUnlikely) atomicAdd(sink, 1u);
}

// 2. The mma.sync kernel's loads: CTA = 1 x kWarpsK warps, each warp kTiles 16-row tiles side by
// side, its K range of chunks, a ring of kDepth chunks (codes 16 B + scales 2 B per lane and tile).
// kWaitEarly: the grid-dependency wait right after the first ring's loads, as the kernel (else at
// the end, as the floor). kAct: 0 no activations; 1 the lane's 32 B of the chunk's activations
// (one row, M = 1) loaded through L1 in each chunk's chain, as the kernel at M <= 8; 2 the same
// loaded one chunk ahead; 3 the CTA's activation row staged in shared memory after the wait.
template <int kWarpsK, int kTiles, int kDepth, bool kScales, bool kWaitEarly, int kAct>
__global__ void pattern_kernel(const std::uint8_t* records, int chunks, const uint4* activations, unsigned* sink) {
  extern __shared__ __align__(16) std::uint8_t shared_bytes[];
  pdl_trigger();
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const std::int64_t tile = std::int64_t(blockIdx.x) * kTiles;
  const int begin = int(std::int64_t(chunks) * warp / kWarpsK), end = int(std::int64_t(chunks) * (warp + 1) / kWarpsK);
  const std::uint8_t* base = records + (tile / 8) * std::int64_t(chunks) * kRecordBytes;
  const std::uint8_t* codes = base + (tile % 8) * kTileCodeBytes + lane * 16;
  const std::uint8_t* scales = base + kRecordCodeBytes + (tile % 8) * kTileScaleBytes + lane * 2;
  uint4 ring[kDepth][kTiles];
  unsigned sring[kDepth][kTiles];
  unsigned digest = 0;
  const auto load = [&](int slot, int chunk) {
#pragma unroll
    for (int t = 0; t < kTiles; ++t) {
      ring[slot][t] = ld16(codes + std::int64_t(chunk) * kRecordBytes + t * kTileCodeBytes);
      sring[slot][t] = kScales ? ld2(scales + std::int64_t(chunk) * kRecordBytes + t * kTileScaleBytes) : 0u;
    }
  };
#pragma unroll
  for (int s = 0; s < kDepth; ++s)
    if (begin + s < end) load(s, begin + s);
  if (kWaitEarly) pdl_wait();
  const uint4* lane_activations = activations + 2 * (lane % 4);  // 8 uint4 per chunk, 2 per lane
  const uint4* shared_activations = reinterpret_cast<const uint4*>(shared_bytes) + 2 * (lane % 4);
  if (kAct == 3) {
    for (int i = threadIdx.x; i < chunks * 8; i += blockDim.x) reinterpret_cast<uint4*>(shared_bytes)[i] = __ldg(activations + i);
    __syncthreads();
  }
  uint4 next_a = make_uint4(0, 0, 0, 0), next_b = next_a;
  if (kAct == 2 && begin < end) next_a = __ldg(lane_activations + begin * 8), next_b = __ldg(lane_activations + begin * 8 + 1);
  for (int round = begin; round < end; round += kDepth) {
#pragma unroll
    for (int s = 0; s < kDepth; ++s) {
      const int chunk = round + s;
      if (chunk < end) {
        uint4 w[kTiles];
        unsigned sc[kTiles];
#pragma unroll
        for (int t = 0; t < kTiles; ++t) w[t] = ring[s][t], sc[t] = sring[s][t];
        if (chunk + kDepth < end) load(s, chunk + kDepth);
        uint4 a = make_uint4(0, 0, 0, 0), b = a;
        if (kAct == 1) a = __ldg(lane_activations + chunk * 8), b = __ldg(lane_activations + chunk * 8 + 1);
        if (kAct == 2) {
          a = next_a, b = next_b;
          if (chunk + 1 < end) next_a = __ldg(lane_activations + chunk * 8 + 8), next_b = __ldg(lane_activations + chunk * 8 + 9);
        }
        if (kAct == 3) a = shared_activations[chunk * 8], b = shared_activations[chunk * 8 + 1];
#pragma unroll
        for (int t = 0; t < kTiles; ++t) digest ^= (w[t].x + a.x) ^ (w[t].y + a.y) ^ (w[t].z + b.z) ^ (w[t].w + b.w) ^ sc[t];
      }
    }
  }
  if (!kWaitEarly) pdl_wait();
  if (digest == kUnlikely) atomicAdd(sink, 1u);
}

// 3. The wgmma kernel's weight path: one producer lane fills a ring of kStages stages (one
// record, 4608 B, per stage: a 128-row CTA's codes and scales of one chunk) by 1-D bulk copies;
// four consumer warps read 16 B per lane of each stage and release it.
__device__ __forceinline__ std::uint32_t smem(const void* p) { return std::uint32_t(__cvta_generic_to_shared(p)); }
template <int kStages>
__global__ void __launch_bounds__(160) bulk_kernel(const std::uint8_t* records, int chunks, int splits, unsigned* sink) {
  extern __shared__ __align__(128) std::uint8_t shared[];
  std::uint64_t* full = reinterpret_cast<std::uint64_t*>(shared + kStages * kRecordBytes);
  std::uint64_t* empty = full + kStages;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int block = blockIdx.x / splits, split = blockIdx.x % splits;
  const int begin = int(std::int64_t(chunks) * split / splits), count = int(std::int64_t(chunks) * (split + 1) / splits) - begin;
  if (threadIdx.x == 0) {
    for (int s = 0; s < kStages; ++s) {
      asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem(&full[s])), "r"(1));
      asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem(&empty[s])), "r"(128));
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  pdl_trigger();
  unsigned digest = 0;
  const auto wait = [](std::uint64_t* bar, unsigned parity) {
    asm volatile(
        "{\n.reg .pred done;\nwait_again:\n"
        "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
        "@!done bra wait_again;\n}\n" ::"r"(smem(bar)),
        "r"(parity)
        : "memory");
  };
  if (warp == 4) {
    if (lane == 0) {
      const std::uint8_t* source = records + (std::int64_t(block) * chunks + begin) * kRecordBytes;
      for (int c = 0; c < count; ++c) {
        const int s = c % kStages;
        const unsigned phase = (c / kStages) & 1;
        if (c >= kStages) wait(&empty[s], phase ^ 1);
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem(&full[s])), "r"(kRecordBytes) : "memory");
        asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                         smem(shared + s * kRecordBytes)),
                     "l"(source + std::int64_t(c) * kRecordBytes), "r"(kRecordBytes), "r"(smem(&full[s]))
                     : "memory");
      }
    }
  } else {
    for (int c = 0; c < count; ++c) {
      const int s = c % kStages;
      wait(&full[s], (c / kStages) & 1);
      const uint4 v = *reinterpret_cast<const uint4*>(shared + s * kRecordBytes + warp * 1024 + lane * 16);
      digest ^= v.x ^ v.y ^ v.z ^ v.w;
      asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem(&empty[s])) : "memory");
    }
  }
  pdl_wait();
  if (digest == kUnlikely) atomicAdd(sink, 1u);
}


// 4. Pre-staging: each CTA owns a contiguous slice; before the grid-dependency wait one lane asks
// for the slice's first `prestage` bytes into shared memory (bulk copies), after it every thread
// streams the rest through registers (kLoads 16-byte loads in flight), then reads the staged part.
template <bool kWaitEarly>
__global__ void __launch_bounds__(512) prestage_kernel(const std::uint8_t* data, std::int64_t total, std::int64_t per_cta, int prestage,
                                                       unsigned* sink) {
  extern __shared__ __align__(128) std::uint8_t shared[];
  __shared__ std::uint64_t full;
  pdl_trigger();
  const std::int64_t begin = std::int64_t(blockIdx.x) * per_cta;
  const std::int64_t end = begin + per_cta < total ? begin + per_cta : total;
  const int staged = int(end - begin < prestage ? end - begin : prestage);
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem(&full)), "r"(1));
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    if (staged > 0) {
      asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem(&full)), "r"(staged) : "memory");
      constexpr int kPiece = 16384;
      for (int at = 0; at < staged; at += kPiece) {
        const int bytes = staged - at < kPiece ? staged - at : kPiece;
        asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(smem(shared + at)),
                     "l"(data + begin + at), "r"(bytes), "r"(smem(&full))
                     : "memory");
      }
    }
  }
  if (kWaitEarly) pdl_wait();
  unsigned digest = 0;
  const uint4* rest = reinterpret_cast<const uint4*>(data + begin + staged);
  const std::int64_t words = (end - begin - staged) / 16;
  constexpr int kLoads = 4;
  for (std::int64_t i = threadIdx.x; i < words; i += kLoads * 512) {
    uint4 w[kLoads];
#pragma unroll
    for (int l = 0; l < kLoads; ++l) w[l] = i + l * 512 < words ? ld16(rest + i + l * 512) : make_uint4(0, 0, 0, 0);
#pragma unroll
    for (int l = 0; l < kLoads; ++l) digest ^= w[l].x ^ w[l].y ^ w[l].z ^ w[l].w;
  }
  __syncthreads();  // the barrier's init is visible to every thread
  if (staged > 0) {
    asm volatile(
        "{\n.reg .pred done;\nwait_again:\n"
        "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], 0;\n"
        "@!done bra wait_again;\n}\n" ::"r"(smem(&full))
        : "memory");
    for (int i = threadIdx.x; i < staged / 16; i += 512) {
      const uint4 v = reinterpret_cast<const uint4*>(shared)[i];
      digest ^= v.x ^ v.y ^ v.z ^ v.w;
    }
  }
  if (!kWaitEarly) pdl_wait();
  if (digest == kUnlikely) atomicAdd(sink, 1u);
}


// 5. The mma.sync kernel's grid with per-warp staging: before the wait each warp asks for its
// chunks [D, D + S) into its own shared-memory area (kMode 0: two bulk copies per chunk, its
// tiles' codes and scales; 1: per-lane cp.async, 16 B of codes per tile and 4 B of scales),
// besides the register ring's first D chunks. After the wait: the ring's chunks, then the staged
// ones (the ring refilled with the chunks after them meanwhile), then the rest through the ring.
template <int kWarpsK, int kTiles, int kDepth, int kStaged, int kMode>
__global__ void staged_kernel(const std::uint8_t* records, int chunks, unsigned* sink) {
  extern __shared__ __align__(128) std::uint8_t shared[];
  constexpr int kCodeBytes = kTiles * kTileCodeBytes, kScaleBytes = kTiles * kTileScaleBytes;
  constexpr int kWarpBytes = kStaged * (kCodeBytes + kScaleBytes);
  __shared__ std::uint64_t full[kWarpsK];
  pdl_trigger();
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const std::int64_t tile = std::int64_t(blockIdx.x) * kTiles;
  const int begin = int(std::int64_t(chunks) * warp / kWarpsK), end = int(std::int64_t(chunks) * (warp + 1) / kWarpsK);
  const std::uint8_t* base = records + (tile / 8) * std::int64_t(chunks) * kRecordBytes;
  const std::uint8_t* codes = base + (tile % 8) * kTileCodeBytes;
  const std::uint8_t* scales = base + kRecordCodeBytes + (tile % 8) * kTileScaleBytes;
  std::uint8_t* area = shared + warp * kWarpBytes;
  const int staged_begin = min(begin + kDepth, end), staged_end = min(begin + kDepth + kStaged, end);
  const int staged = staged_end - staged_begin;
  uint4 ring[kDepth][kTiles];
  unsigned sring[kDepth][kTiles];
  unsigned digest = 0;
  const auto load = [&](int slot, int chunk) {
#pragma unroll
    for (int t = 0; t < kTiles; ++t) {
      ring[slot][t] = ld16(codes + lane * 16 + std::int64_t(chunk) * kRecordBytes + t * kTileCodeBytes);
      sring[slot][t] = ld2(scales + lane * 2 + std::int64_t(chunk) * kRecordBytes + t * kTileScaleBytes);
    }
  };
  const auto consume = [&](int slot) {
#pragma unroll
    for (int t = 0; t < kTiles; ++t) digest ^= ring[slot][t].x ^ ring[slot][t].y ^ ring[slot][t].z ^ ring[slot][t].w ^ sring[slot][t];
  };
#pragma unroll
  for (int s = 0; s < kDepth; ++s)
    if (begin + s < end) load(s, begin + s);
  if (kMode == 0) {
    if (lane == 0) {
      asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem(&full[warp])), "r"(1));
      asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
      if (staged > 0) {
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem(&full[warp])),
                     "r"(staged * (kCodeBytes + kScaleBytes))
                     : "memory");
        for (int j = 0; j < staged; ++j) {
          const std::int64_t at = std::int64_t(staged_begin + j) * kRecordBytes;
          asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                           smem(area + j * kCodeBytes)),
                       "l"(codes + at), "r"(kCodeBytes), "r"(smem(&full[warp]))
                       : "memory");
          asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                           smem(area + kStaged * kCodeBytes + j * kScaleBytes)),
                       "l"(scales + at), "r"(kScaleBytes), "r"(smem(&full[warp]))
                       : "memory");
        }
      }
    }
    __syncwarp();
  } else {
    for (int j = 0; j < staged; ++j) {
      const std::int64_t at = std::int64_t(staged_begin + j) * kRecordBytes;
#pragma unroll
      for (int t = 0; t < kTiles; ++t)
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(smem(area + j * kCodeBytes + t * kTileCodeBytes + lane * 16)),
                     "l"(codes + at + t * kTileCodeBytes + lane * 16)
                     : "memory");
      if (lane * 4 < kScaleBytes)
        asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" ::"r"(smem(area + kStaged * kCodeBytes + j * kScaleBytes + lane * 4)),
                     "l"(scales + at + lane * 4)
                     : "memory");
    }
    asm volatile("cp.async.commit_group;" ::: "memory");
  }
  pdl_wait();
  for (int s = 0; s < kDepth; ++s)
    if (begin + s < end) consume(s);
  const int rest = staged_end;
#pragma unroll
  for (int s = 0; s < kDepth; ++s)
    if (rest + s < end) load(s, rest + s);
  if (staged > 0) {
    if (kMode == 0) {
      asm volatile(
          "{\n.reg .pred done;\nwait_again:\n"
          "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], 0;\n"
          "@!done bra wait_again;\n}\n" ::"r"(smem(&full[warp]))
          : "memory");
    } else {
      asm volatile("cp.async.wait_group 0;" ::: "memory");
      __syncwarp();
    }
    for (int j = 0; j < staged; ++j) {
#pragma unroll
      for (int t = 0; t < kTiles; ++t) {
        const uint4 v = *reinterpret_cast<const uint4*>(area + j * kCodeBytes + t * kTileCodeBytes + lane * 16);
        const unsigned sc = *reinterpret_cast<const std::uint16_t*>(area + kStaged * kCodeBytes + j * kScaleBytes + t * kTileScaleBytes + lane * 2);
        digest ^= v.x ^ v.y ^ v.z ^ v.w ^ sc;
      }
    }
  }
  for (int round = rest; round < end; round += kDepth) {
#pragma unroll
    for (int s = 0; s < kDepth; ++s) {
      const int chunk = round + s;
      if (chunk < end) {
        consume(s);
        if (chunk + kDepth < end) load(s, chunk + kDepth);
      }
    }
  }
  if (digest == kUnlikely) atomicAdd(sink, 1u);
}

struct Shape {
  int n, k;
};

int g_sms = 0;
cudaStream_t g_stream;

// Times `launch(copy)` back to back in a CUDA graph (PDL between launches), weights rotated.
template <class Launch>
double time_us(int copies, Launch launch) {
  const int calls = std::max(20, copies * 4);
  cudaGraph_t graph;
  CHECK(cudaStreamBeginCapture(g_stream, cudaStreamCaptureModeThreadLocal));
  for (int c = 0; c < calls; ++c) launch(c % copies);
  CHECK(cudaStreamEndCapture(g_stream, &graph));
  cudaGraphExec_t exec;
  CHECK(cudaGraphInstantiate(&exec, graph, 0));
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  for (int w = 0; w < 3; ++w) CHECK(cudaGraphLaunch(exec, g_stream));
  std::vector<double> t;
  for (int r = 0; r < 15; ++r) {
    CHECK(cudaEventRecord(a, g_stream));
    CHECK(cudaGraphLaunch(exec, g_stream));
    CHECK(cudaEventRecord(b, g_stream));
    CHECK(cudaEventSynchronize(b));
    float ms;
    CHECK(cudaEventElapsedTime(&ms, a, b));
    t.push_back(ms * 1000.0 / calls);
  }
  std::sort(t.begin(), t.end());
  CHECK(cudaGraphExecDestroy(exec));
  CHECK(cudaGraphDestroy(graph));
  return t[t.size() / 2];
}

template <class Kernel, class... Args>
void launch_kernel(Kernel kernel, int ctas, int threads, int shared, Args... args) {
  cudaLaunchAttribute attribute = {};
  attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(ctas);
  config.blockDim = dim3(threads);
  config.dynamicSmemBytes = shared;
  config.stream = g_stream;
  config.attrs = &attribute;
  config.numAttrs = 1;
  CHECK(cudaLaunchKernelEx(&config, kernel, args...));
}

// Dynamic shared memory that caps a kernel at `ctas` CTAs per SM (0: no cap).
int cap_shared(int ctas) { return ctas == 0 ? 0 : 233472 / ctas - 1024 - 2048; }

template <class Kernel>
int occupancy(Kernel kernel, int threads, int shared) {
  int ctas = 0;
  CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&ctas, kernel, threads, shared));
  return ctas;
}

void report(const char* kind, Shape s, const std::string& variant, double us, double bytes) {
  std::printf("%-10s %5dx%-5d %-40s %8.2f us %7.0f GB/s\n", kind, s.n, s.k, variant.c_str(), us, bytes / us / 1e3);
  std::fflush(stdout);
}

const uint4* g_activations = nullptr;

template <int kWarpsK, int kTiles, int kDepth, bool kWaitEarly, int kAct, bool kScales = true>
void run_pattern(Shape s, const std::vector<std::uint8_t*>& w, unsigned* sink, int ctas_per_sm, double bytes) {
  const auto kernel = pattern_kernel<kWarpsK, kTiles, kDepth, kScales, kWaitEarly, kAct>;
  const int shared = std::max(cap_shared(ctas_per_sm), kAct == 3 ? s.k * 2 : 0);
  CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, shared));
  const int chunks = s.k / 64, ctas = (s.n / 16 + kTiles - 1) / kTiles;
  const double us = time_us(int(w.size()), [&](int c) {
    launch_kernel(kernel, ctas, 32 * kWarpsK, shared, (const std::uint8_t*)w[c], chunks, g_activations, sink);
  });
  static const char* acts[] = {"no act", "act ldg in chain", "act ldg 1 ahead", "act smem"};
  char name[128];
  std::snprintf(name, sizeof name, "1x%d w, %d t, d%d, wait %s, %s%s, %d/SM", kWarpsK, kTiles, kDepth, kWaitEarly ? "early" : "end",
                acts[kAct], kScales ? "" : ", no scales", occupancy(kernel, 32 * kWarpsK, shared));
  report("pattern", s, name, us, bytes);
}

// The kernel's configurations: wait at the end / early, then the activation variants.
template <int kWarpsK, int kTiles, int kDepth>
void run_pattern_set(Shape s, const std::vector<std::uint8_t*>& w, unsigned* sink, int ctas_per_sm, double bytes) {
  run_pattern<kWarpsK, kTiles, kDepth, false, 0>(s, w, sink, ctas_per_sm, bytes);
  run_pattern<kWarpsK, kTiles, kDepth, true, 0>(s, w, sink, ctas_per_sm, bytes);
  run_pattern<kWarpsK, kTiles, kDepth, true, 1>(s, w, sink, ctas_per_sm, bytes);
  run_pattern<kWarpsK, kTiles, kDepth, true, 2>(s, w, sink, ctas_per_sm, bytes);
  run_pattern<kWarpsK, kTiles, kDepth, true, 3>(s, w, sink, ctas_per_sm, bytes);
  run_pattern<kWarpsK, kTiles, kDepth, false, 1>(s, w, sink, ctas_per_sm, bytes);
}

template <int kLoads>
void run_sequential(Shape s, const std::vector<std::uint8_t*>& w, unsigned* sink, int ctas_per_sm, double bytes) {
  const std::int64_t words = std::int64_t(bytes) / 16;
  const double us = time_us(int(w.size()), [&](int c) {
    launch_kernel(sequential_kernel<kLoads>, ctas_per_sm * g_sms, 512, 0, (const uint4*)w[c], words, sink);
  });
  char name[128];
  std::snprintf(name, sizeof name, "%d CTAs x 512 /SM, %d loads (%d KB/SM)", ctas_per_sm, kLoads, ctas_per_sm * 512 * kLoads * 16 / 1024);
  report("sequential", s, name, us, bytes);
}

template <int kStages>
void run_bulk(Shape s, const std::vector<std::uint8_t*>& w, unsigned* sink, int splits, int ctas_per_sm, double bytes) {
  const auto kernel = bulk_kernel<kStages>;
  const int shared = std::max(kStages * kRecordBytes + 2 * kStages * 8, cap_shared(ctas_per_sm));
  CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, shared));
  const int chunks = s.k / 64, blocks = s.n / 128;
  const double us = time_us(int(w.size()), [&](int c) { launch_kernel(kernel, blocks * splits, 160, shared, (const std::uint8_t*)w[c], chunks, splits, sink); });
  char name[128];
  std::snprintf(name, sizeof name, "%d CTAs, %d stages, split %d, %d/SM", blocks * splits, kStages, splits, occupancy(kernel, 160, shared));
  report("bulk", s, name, us, bytes);
}


template <bool kWaitEarly>
void run_prestage(Shape s, const std::vector<std::uint8_t*>& w, unsigned* sink, int ctas_per_sm_grid, int capacity, int prestage, double bytes) {
  const auto kernel = prestage_kernel<kWaitEarly>;
  const int shared = std::max(prestage, cap_shared(capacity));
  CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, shared));
  const int ctas = ctas_per_sm_grid * g_sms;
  const std::int64_t total = std::int64_t(bytes);
  std::int64_t per_cta = (total + ctas - 1) / ctas;
  per_cta = (per_cta + 15) / 16 * 16;
  const double us = time_us(int(w.size()), [&](int c) { launch_kernel(kernel, ctas, 512, shared, (const std::uint8_t*)w[c], total, per_cta, prestage, sink); });
  char name[128];
  std::snprintf(name, sizeof name, "%d CTA/SM of %d, staged %d KB of %lld, wait %s", ctas_per_sm_grid, occupancy(kernel, 512, shared), prestage / 1024,
                (long long)(per_cta / 1024), kWaitEarly ? "early" : "end");
  report("prestage", s, name, us, bytes);
}


template <int kWarpsK, int kTiles, int kDepth, int kStaged, int kMode>
void run_staged(Shape s, const std::vector<std::uint8_t*>& w, unsigned* sink, int ctas_per_sm, double bytes) {
  const auto kernel = staged_kernel<kWarpsK, kTiles, kDepth, kStaged, kMode>;
  const int need = kWarpsK * kStaged * kTiles * (kTileCodeBytes + kTileScaleBytes);
  const int shared = std::max(need, cap_shared(ctas_per_sm));
  CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, shared));
  const int chunks = s.k / 64, ctas = (s.n / 16 + kTiles - 1) / kTiles;
  const double us = time_us(int(w.size()), [&](int c) { launch_kernel(kernel, ctas, 32 * kWarpsK, shared, (const std::uint8_t*)w[c], chunks, sink); });
  char name[128];
  std::snprintf(name, sizeof name, "1x%d w, %d t, d%d, staged %d %s, %d/SM", kWarpsK, kTiles, kDepth, kStaged, kMode ? "cp.async" : "bulk",
                occupancy(kernel, 32 * kWarpsK, shared));
  report("staged", s, name, us, bytes);
}

int main(int argc, char** argv) {
  const int call = argc > 1 ? std::atoi(argv[1] + (std::strncmp(argv[1], "call", 4) == 0 ? 4 : 0)) : 4;
  if (call < 1 || call > 4) {
    std::fprintf(stderr, "usage: %s call1|call2|call3|call4\n", argv[0]);
    return 2;
  }
  CHECK(cudaStreamCreate(&g_stream));
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  g_sms = prop.multiProcessorCount;
  std::printf("# %s, %d SMs, L2 %d MB\n", prop.name, g_sms, prop.l2CacheSize >> 20);
  unsigned* sink;
  CHECK(cudaMalloc(&sink, 4));
  uint4* activations;
  CHECK(cudaMalloc(&activations, 16384 * 2));
  CHECK(cudaMemset(activations, 0x3C, 16384 * 2));
  g_activations = activations;
  const Shape shapes[] = {{12288, 4096}, {28672, 8192}, {4096, 12288}, {4096, 4096}, {8192, 8192}};
  for (const Shape s : shapes) {
    const std::int64_t bytes = std::int64_t(s.n / 128) * (s.k / 64) * kRecordBytes;
    const int copies = int((2.0 * prop.l2CacheSize + bytes - 1) / bytes) + 1;
    std::vector<std::uint8_t*> w(copies);
    for (auto& p : w) {
      CHECK(cudaMalloc(&p, bytes));
      CHECK(cudaMemset(p, 0x5A, bytes));
    }
    const double b = double(bytes);
    if (call == 1) {
      run_sequential<4>(s, w, sink, 4, b);
      run_sequential<2>(s, w, sink, 4, b);
      run_sequential<1>(s, w, sink, 4, b);
      run_sequential<2>(s, w, sink, 2, b);
      // The mma.sync kernel's M = 1 shapes (decode_tuning.cpp) at their occupancy, and variants.
      if (s.n == 12288) {
        run_pattern<8, 2, 2, false, 0>(s, w, sink, 3, b);
        run_pattern<8, 2, 2, false, 0, false>(s, w, sink, 3, b);
        run_pattern<8, 2, 4, false, 0>(s, w, sink, 3, b);
        run_pattern<8, 2, 2, false, 0>(s, w, sink, 0, b);
        run_pattern<8, 1, 4, false, 0>(s, w, sink, 3, b);
        run_pattern<8, 1, 8, false, 0>(s, w, sink, 0, b);
      } else if (s.n == 28672 || s.n == 8192) {
        run_pattern<4, 2, 2, false, 0>(s, w, sink, 7, b);
        run_pattern<4, 2, 2, false, 0, false>(s, w, sink, 7, b);
        run_pattern<4, 2, 4, false, 0>(s, w, sink, 7, b);
        run_pattern<4, 2, 2, false, 0>(s, w, sink, 0, b);
        run_pattern<8, 2, 4, false, 0>(s, w, sink, 0, b);
      } else {
        run_pattern<12, 1, 4, false, 0>(s, w, sink, 2, b);
        run_pattern<12, 1, 4, false, 0, false>(s, w, sink, 2, b);
        run_pattern<12, 1, 8, false, 0>(s, w, sink, 2, b);
        run_pattern<12, 1, 4, false, 0>(s, w, sink, 0, b);
        run_pattern<8, 1, 8, false, 0>(s, w, sink, 0, b);
      }
      // The wgmma kernel's weight path: 128-row CTAs, K splits to fill the GPU.
      const int blocks = s.n / 128;
      for (int splits = 1; splits <= 8; splits *= 2) {
        if (blocks * splits > 8 * g_sms) break;
        if (blocks * splits < g_sms / 2) continue;
        run_bulk<8>(s, w, sink, splits, 2, b);
        run_bulk<8>(s, w, sink, splits, 0, b);
        run_bulk<16>(s, w, sink, splits, 0, b);
      }
    } else if (call == 2) {
      run_sequential<4>(s, w, sink, 4, b);
      if (s.n == 12288) {
        run_pattern_set<8, 2, 2>(s, w, sink, 3, b);
        run_pattern<8, 2, 4, true, 3>(s, w, sink, 3, b);
        run_pattern<8, 2, 4, true, 0>(s, w, sink, 3, b);
      } else if (s.n == 28672) {
        run_pattern_set<4, 2, 2>(s, w, sink, 7, b);
        run_pattern<4, 2, 4, true, 3>(s, w, sink, 7, b);
      } else if (s.n == 8192) {
        run_pattern_set<8, 1, 4>(s, w, sink, 3, b);
        run_pattern<4, 2, 2, true, 3>(s, w, sink, 7, b);
      } else {
        run_pattern_set<12, 1, 4>(s, w, sink, 2, b);
        run_pattern<12, 1, 8, true, 3>(s, w, sink, 2, b);
        run_pattern<8, 1, 8, true, 3>(s, w, sink, 3, b);
      }
    } else if (call == 3) {
      run_sequential<4>(s, w, sink, 4, b);
      run_prestage<false>(s, w, sink, 1, 2, 0, b);
      run_prestage<true>(s, w, sink, 1, 2, 0, b);
      run_prestage<true>(s, w, sink, 1, 2, 65536, b);
      run_prestage<true>(s, w, sink, 1, 2, 106496, b);
      run_prestage<true>(s, w, sink, 1, 1, 200704, b);
      run_prestage<true>(s, w, sink, 2, 4, 0, b);
      run_prestage<true>(s, w, sink, 2, 4, 49152, b);
      run_prestage<true>(s, w, sink, 2, 2, 49152, b);
      run_prestage<false>(s, w, sink, 2, 4, 49152, b);
    } else {
      run_sequential<4>(s, w, sink, 4, b);
      if (s.n == 12288) {
        run_staged<8, 2, 2, 0, 0>(s, w, sink, 3, b);
        run_staged<8, 2, 2, 6, 0>(s, w, sink, 3, b);
        run_staged<8, 2, 2, 6, 1>(s, w, sink, 3, b);
        run_staged<8, 2, 2, 3, 0>(s, w, sink, 3, b);
        run_staged<8, 2, 2, 3, 1>(s, w, sink, 3, b);
      } else if (s.n == 28672) {
        run_staged<4, 2, 2, 0, 0>(s, w, sink, 7, b);
        run_staged<4, 2, 2, 6, 0>(s, w, sink, 7, b);
        run_staged<4, 2, 2, 6, 1>(s, w, sink, 7, b);
        run_staged<4, 2, 2, 3, 1>(s, w, sink, 7, b);
      } else if (s.n == 8192) {
        run_staged<8, 1, 4, 0, 0>(s, w, sink, 3, b);
        run_staged<8, 1, 4, 12, 0>(s, w, sink, 3, b);
        run_staged<8, 1, 4, 12, 1>(s, w, sink, 3, b);
        run_staged<4, 2, 2, 6, 1>(s, w, sink, 7, b);
      } else {
        run_staged<12, 1, 4, 0, 0>(s, w, sink, 2, b);
        run_staged<12, 1, 4, 12, 0>(s, w, sink, 2, b);
        run_staged<12, 1, 4, 12, 1>(s, w, sink, 2, b);
        run_staged<12, 1, 2, 4, 1>(s, w, sink, 2, b);
      }
    }
    for (auto p : w) CHECK(cudaFree(p));
  }
  CHECK(cudaDeviceSynchronize());
  return 0;
}
