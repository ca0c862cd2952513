// NVFP4 x BF16 GEMM for small M (1..64): weights stream from HBM once, are decoded to BF16 in
// registers and multiplied on the tensor cores with mma.sync.m16n8k16 (FP32 accumulate).
// Hopper has no FP4 MMA, so this is the exact path: every e2m1 x e4m3 product is exact in BF16.
//
// Decode trick (see decode_layout.hpp for the nibble order): a nibble s|e1 e0 m placed at BF16
// bits 15 | 8..6 is the BF16 number value * 2^-126 (exponent field e, mantissa bit m; e = 0 gives
// the subnormal m * 2^-127). Multiplying by scale * 2^118 (exact, normal) yields value * scale * 2^-8;
// the epilogue multiplies by alpha * 2^8. Products of powers of two are exact, so results equal
// those of the unscaled computation.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "backends/cuda_decode/decode_bits.hpp"
#include "backends/cuda_decode/decode_layout.hpp"
#include "backends/cuda_decode/sm90_decode_gemm.cuh"

namespace fp4gemm::cuda_decode {
namespace {

constexpr float kDecodeCompensation = 256.0f;  // 2^8, undoes the 2^-8 left by the decode trick

// E4M3 code -> BF16 bits of (value * 2^118).
__device__ __forceinline__ std::uint16_t scale_to_bf16_bits(unsigned code) {
  const unsigned exponent = (code >> 3) & 0xF, mantissa = code & 0x7;
  float value = exponent == 0 ? float(mantissa) * 0x1p-9f : float(8 + mantissa) * exp2f(float(int(exponent) - 10));
  value *= 0x1p118f;
  if (code & 0x80) value = -value;
  const __nv_bfloat16 bf = __float2bfloat16_rn(value);
  return *reinterpret_cast<const std::uint16_t*>(&bf);
}

__device__ __forceinline__ std::uint32_t bf16x2_mul(std::uint32_t a, std::uint32_t b) {
  std::uint32_t result;
  // fma with -0.0 addend is an exact product (sm_80+); mul.bf16x2 itself needs sm_90.
  asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(result) : "r"(a), "r"(b), "r"(0x80008000u));
  return result;
}

// Streaming load: the weight is read exactly once, so keep it out of L1.
// Asynchronous global -> shared copies (sm_80+): bytes in flight cost no registers.
__device__ __forceinline__ void copy_async_16(void* shared, const void* global) {
  const unsigned address = static_cast<unsigned>(__cvta_generic_to_shared(shared));
  asm volatile("cp.async.cg.shared.global.L2::128B [%0], [%1], 16;" ::"r"(address), "l"(global) : "memory");
}
__device__ __forceinline__ void copy_async_8(void* shared, const void* global) {
  const unsigned address = static_cast<unsigned>(__cvta_generic_to_shared(shared));
  asm volatile("cp.async.ca.shared.global [%0], [%1], 8;" ::"r"(address), "l"(global) : "memory");
}
__device__ __forceinline__ void commit_copies() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int kPending>
__device__ __forceinline__ void wait_copies() { asm volatile("cp.async.wait_group %0;" ::"n"(kPending) : "memory"); }

__device__ __forceinline__ void mma_bf16(float (&c)[4], const std::uint32_t (&a)[4], std::uint32_t b0, std::uint32_t b1) {
  asm(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// One block's A fragment from the lane's 32-bit code word and its two rows' scale pairs.
__device__ __forceinline__ void decode_fragment(std::uint32_t word, std::uint32_t scale_row_g, std::uint32_t scale_row_g8,
                                                std::uint32_t (&fragment)[4]) {
#pragma unroll
  for (int p = 0; p < 4; ++p) fragment[p] = bf16x2_mul(fragment_bits(word, p), (p % 2 == 0) ? scale_row_g : scale_row_g8);
}

__device__ __forceinline__ void store_output(void* out, std::int64_t index, DType dtype, float value) {
  switch (dtype) {
    case DType::f32: static_cast<float*>(out)[index] = value; break;
    case DType::bf16: static_cast<__nv_bfloat16*>(out)[index] = __float2bfloat16_rn(value); break;
    case DType::f16: static_cast<__half*>(out)[index] = __float2half_rn(value); break;
  }
}

template <int kMTiles, int kWarpsN, int kWarpsK>
__global__ void __launch_bounds__(32 * kWarpsN * kWarpsK) decode_gemm_kernel(const DecodeGemmArgs args) {
  constexpr int kThreads = 32 * kWarpsN * kWarpsK;
  constexpr int kCtaRows = kTileRows * kWarpsN;
  constexpr int kCols = kMTiles * 8;
  // Weight chunks in flight per warp (cp.async ring in shared memory). Deep enough that an SM
  // keeps ~64 KB of weights in flight (HBM bandwidth x loaded latency), within the smem budget.
  constexpr int kStages = kMTiles >= 8 ? 2 : kMTiles >= 4 ? 4 : 8;
  constexpr int kWarps = kWarpsN * kWarpsK;
  static_assert(kThreads <= 1024 && kThreads >= 32, "CTA size");
  static_assert(kWarpsK * kCtaRows * (kCols + 1) * 4 + kWarps * kStages * (512 + 64) + 1024 <= 48 * 1024,
                "partial sums and the copy rings must fit static shared memory");

  __shared__ std::uint32_t scale_table[256];  // E4M3 code -> BF16x2 pair (both lanes the scale)
  __shared__ float partial[kWarpsK][kCtaRows][kCols + 1];  // +1: no bank conflicts on the transpose
  __shared__ uint4 code_stages[kWarps][kStages][32];
  __shared__ uint2 scale_stages[kWarps][kStages][8];

  // Set up: the E4M3 -> BF16*2^118 table.
  for (int code = threadIdx.x; code < 256; code += kThreads) scale_table[code] = std::uint32_t(scale_to_bf16_bits(code)) * 0x10001u;
  __syncthreads();

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int warp_n = warp % kWarpsN, warp_k = warp / kWarpsN;
  const int group = lane / 4, thread_in_group = lane % 4;
  const std::int64_t row_tile = std::int64_t(blockIdx.x) * kWarpsN + warp_n;
  const std::int64_t row_tiles = (args.n + kTileRows - 1) / kTileRows;

  // Two accumulator sets for few tiles: alternating blocks between them lets consecutive MMAs
  // overlap instead of each waiting for the previous one's result.
  constexpr int kSets = kMTiles <= 2 ? 2 : 1;
  float accumulators[kSets][kMTiles][4];
#pragma unroll
  for (int set = 0; set < kSets; ++set)
    for (int tile = 0; tile < kMTiles; ++tile)
      for (int i = 0; i < 4; ++i) accumulators[set][tile][i] = 0.0f;

  if (row_tile < row_tiles) {
    const int chunk_begin = int(std::int64_t(args.chunks) * warp_k / kWarpsK);
    const int chunk_end = int(std::int64_t(args.chunks) * (warp_k + 1) / kWarpsK);
    const uint4* codes = static_cast<const uint4*>(args.codes) + (row_tile * args.chunks) * 32 + lane;
    const uint2* scales = static_cast<const uint2*>(args.scales) + (row_tile * args.chunks) * 8 + group;
    const std::uint16_t* activations = static_cast<const std::uint16_t*>(args.activations);
    uint4(&code_ring)[kStages][32] = code_stages[warp];
    uint2(&scale_ring)[kStages][8] = scale_stages[warp];

    // Issue copies: chunk -> its ring slot. Each lane copies its own 16 code bytes; the first lane
    // of each group copies the group's 8 scale bytes. Always commit, so group counts stay uniform.
    const auto issue_chunk = [&](int chunk) {
      if (chunk < chunk_end) {
        const int slot = (chunk - chunk_begin) % kStages;
        copy_async_16(&code_ring[slot][lane], codes + std::int64_t(chunk) * 32);
        if (thread_in_group == 0) copy_async_8(&scale_ring[slot][group], scales + std::int64_t(chunk) * 8);
      }
      commit_copies();
    };
#pragma unroll
    for (int stage = 0; stage < kStages - 1; ++stage) issue_chunk(chunk_begin + stage);

    bool row_valid[kMTiles];  // activation rows past M read as zero
#pragma unroll
    for (int tile = 0; tile < kMTiles; ++tile) row_valid[tile] = tile * 8 + group < args.m;
    // Lane t of a group reads chunk columns [16t, 16t+16) of its activation row (decode_layout.hpp).
    const std::uint16_t* activation_lane =
        activations + std::int64_t(group) * args.activation_stride + kChunkColumnOfLane * thread_in_group;

    // The lane's 16 activations of one chunk and tile as 8 words: B fragment of MMA block b is
    // words (2b, 2b+1). Loaded one chunk ahead into the other of two buffers (ping-pong).
    using BFragments = std::uint32_t[kMTiles][8];
    const auto load_activations = [&](int chunk, BFragments& out) {
      // The lane's columns are one whole NVFP4 block: inside K or not at all.
      const bool k_valid = chunk < chunk_end && chunk * kChunkK + kChunkColumnOfLane * thread_in_group < args.k;
#pragma unroll
      for (int tile = 0; tile < kMTiles; ++tile) {
        const bool valid = row_valid[tile] && k_valid;
        const std::uint16_t* source = activation_lane + std::int64_t(tile * 8) * args.activation_stride + chunk * kChunkK;
        if (args.activations_16b_aligned) {
          const uint4 low = valid ? __ldg(reinterpret_cast<const uint4*>(source)) : make_uint4(0, 0, 0, 0);
          const uint4 high = valid ? __ldg(reinterpret_cast<const uint4*>(source + 8)) : make_uint4(0, 0, 0, 0);
          out[tile][0] = low.x, out[tile][1] = low.y, out[tile][2] = low.z, out[tile][3] = low.w;
          out[tile][4] = high.x, out[tile][5] = high.y, out[tile][6] = high.z, out[tile][7] = high.w;
        } else {
#pragma unroll
          for (int word = 0; word < 8; ++word)
            out[tile][word] = valid ? __ldg(reinterpret_cast<const unsigned int*>(source) + word) : 0u;
        }
      }
    };
    const auto compute_chunk = [&](int chunk, const BFragments& b_fragments) {
      // kStages-1 + (chunk - chunk_begin) groups are issued; this chunk's is done once at most
      // kStages-2 are pending.
      wait_copies<kStages - 2>();
      // NOTE: one barrier serves two purposes: scale bytes were copied by another lane of the
      // group, and every lane has finished reading the slot that the next copy overwrites (the
      // slot read in the previous iteration).
      __syncwarp();
      issue_chunk(chunk + kStages - 1);
      const int slot = (chunk - chunk_begin) % kStages;
      const uint4 code_words = code_ring[slot][lane];
      const uint2 scale_words = scale_ring[slot][group];
      // One scale pair per row for the whole chunk: the lane's NVFP4 block is chunk block t.
      const std::uint32_t pair_g = scale_table[(scale_words.x >> (8 * thread_in_group)) & 0xFF];
      const std::uint32_t pair_g8 = scale_table[(scale_words.y >> (8 * thread_in_group)) & 0xFF];
      const std::uint32_t words[4] = {code_words.x, code_words.y, code_words.z, code_words.w};
#pragma unroll
      for (int block = 0; block < kBlocksPerChunk; ++block) {
        std::uint32_t fragment[4];
        decode_fragment(words[block], pair_g, pair_g8, fragment);
#pragma unroll
        for (int tile = 0; tile < kMTiles; ++tile)
          mma_bf16(accumulators[block % kSets][tile], fragment, b_fragments[tile][2 * block], b_fragments[tile][2 * block + 1]);
      }
    };

    BFragments b_even, b_odd;
    load_activations(chunk_begin, b_even);
    for (int chunk = chunk_begin; chunk < chunk_end; chunk += 2) {
      load_activations(chunk + 1, b_odd);
      compute_chunk(chunk, b_even);
      if (chunk + 1 >= chunk_end) break;
      load_activations(chunk + 2, b_even);
      compute_chunk(chunk + 1, b_odd);
    }
    wait_copies<0>();
  }

  // Reduce the kWarpsK partial sums through shared memory. C fragment: c0,c1 are (row g, cols 2t,
  // 2t+1), c2,c3 are (row g+8, same cols); rows are weight rows, cols activation rows.
#pragma unroll
  for (int tile = 0; tile < kMTiles; ++tile) {
#pragma unroll
    for (int set = 1; set < kSets; ++set)
      for (int i = 0; i < 4; ++i) accumulators[0][tile][i] += accumulators[set][tile][i];
    const int col = tile * 8 + 2 * thread_in_group;
    const int row = warp_n * kTileRows + group;
    partial[warp_k][row][col] = accumulators[0][tile][0];
    partial[warp_k][row][col + 1] = accumulators[0][tile][1];
    partial[warp_k][row + 8][col] = accumulators[0][tile][2];
    partial[warp_k][row + 8][col + 1] = accumulators[0][tile][3];
  }
  __syncthreads();

  // Write: consecutive threads take consecutive weight rows, so stores along N coalesce.
  const float scale = args.alpha * kDecodeCompensation;
  for (int index = threadIdx.x; index < kCtaRows * kCols; index += kThreads) {
    const int col = index / kCtaRows, row = index % kCtaRows;
    const std::int64_t n = std::int64_t(blockIdx.x) * kCtaRows + row;
    if (col >= args.m || n >= args.n) continue;
    float sum = 0.0f;
#pragma unroll
    for (int split = 0; split < kWarpsK; ++split) sum += partial[split][row][col];
    store_output(args.out, std::int64_t(col) * args.out_stride + n, args.out_dtype, scale * sum);
  }
}

template <int kMTiles, int kWarpsN, int kWarpsK>
cudaError_t launch(const DecodeGemmArgs& args, cudaStream_t stream) {
  const std::int64_t row_tiles = (args.n + kTileRows - 1) / kTileRows;
  const dim3 grid(unsigned((row_tiles + kWarpsN - 1) / kWarpsN));
  decode_gemm_kernel<kMTiles, kWarpsN, kWarpsK><<<grid, 32 * kWarpsN * kWarpsK, 0, stream>>>(args);
  return cudaGetLastError();
}

// The compiled shapes: decode_tuning.cpp's choices plus the alternatives the sweep compares
// (scripts/decode_shape_sweep.sh). NOTE: keep choose_launch_shape's results in this list.
#define FP4GEMM_DECODE_SHAPES(X) \
  X(1, 1, 8) X(1, 2, 4) X(1, 1, 4) X(1, 2, 2) \
  X(2, 1, 8) X(2, 2, 4) X(2, 2, 2) \
  X(4, 2, 4) X(4, 4, 2) \
  X(8, 2, 4) X(8, 4, 2)

}  // namespace

cudaError_t launch_decode_gemm(const DecodeGemmArgs& args, const LaunchShape& shape, cudaStream_t stream) {
#define FP4GEMM_DECODE_LAUNCH(mt, wn, wk) \
  if (shape.m_tiles == mt && shape.warps_n == wn && shape.warps_k == wk) return launch<mt, wn, wk>(args, stream);
  FP4GEMM_DECODE_SHAPES(FP4GEMM_DECODE_LAUNCH)
#undef FP4GEMM_DECODE_LAUNCH
  return cudaErrorInvalidConfiguration;
}

bool is_compiled_shape(const LaunchShape& shape) {
#define FP4GEMM_DECODE_MATCH(mt, wn, wk) \
  if (shape.m_tiles == mt && shape.warps_n == wn && shape.warps_k == wk) return true;
  FP4GEMM_DECODE_SHAPES(FP4GEMM_DECODE_MATCH)
#undef FP4GEMM_DECODE_MATCH
  return false;
}

}  // namespace fp4gemm::cuda_decode
