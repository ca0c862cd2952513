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
__device__ __forceinline__ uint4 load_streaming(const uint4* address) {
  uint4 value;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(value.x), "=r"(value.y), "=r"(value.z), "=r"(value.w)
               : "l"(address));
  return value;
}

__device__ __forceinline__ void mma_bf16(float (&c)[4], const std::uint32_t (&a)[4], std::uint32_t b0, std::uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// One block's A fragment from the lane's 32-bit code word and its two rows' scale pairs.
__device__ __forceinline__ void decode_fragment(std::uint32_t word, std::uint32_t scale_row_g, std::uint32_t scale_row_g8,
                                                std::uint32_t (&fragment)[4]) {
#pragma unroll
  for (int p = 0; p < 4; ++p) {
    const std::uint32_t shifted = word >> (4 * p);
    const std::uint32_t bits = ((shifted << 6) & 0x01C001C0u) | ((shifted << 12) & 0x80008000u);
    fragment[p] = bf16x2_mul(bits, (p % 2 == 0) ? scale_row_g : scale_row_g8);
  }
}

__device__ __forceinline__ void store_output(void* out, std::int64_t index, OutputKind kind, float value) {
  switch (kind) {
    case OutputKind::f32: static_cast<float*>(out)[index] = value; break;
    case OutputKind::bf16: static_cast<__nv_bfloat16*>(out)[index] = __float2bfloat16_rn(value); break;
    case OutputKind::f16: static_cast<__half*>(out)[index] = __float2half_rn(value); break;
  }
}

template <int kMTiles, int kWarpsN, int kWarpsK>
__global__ void __launch_bounds__(32 * kWarpsN * kWarpsK) decode_gemm_kernel(const DecodeGemmArgs args) {
  constexpr int kThreads = 32 * kWarpsN * kWarpsK;
  constexpr int kCtaRows = kTileRows * kWarpsN;
  constexpr int kCols = kMTiles * 8;
  constexpr int kUnroll = 4;  // chunks whose loads are issued before the first is used
  static_assert(kThreads <= 1024 && kThreads >= 32, "CTA size");
  static_assert(kWarpsK * kCtaRows * kCols * 4 <= 48 * 1024, "partial sums must fit static shared memory");

  __shared__ std::uint16_t scale_table[256];
  __shared__ float partial[kWarpsK][kCtaRows][kCols + 1];  // +1: no bank conflicts on the transpose

  // Set up: the E4M3 -> BF16*2^118 table.
  for (int code = threadIdx.x; code < 256; code += kThreads) scale_table[code] = scale_to_bf16_bits(code);
  __syncthreads();

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int warp_n = warp % kWarpsN, warp_k = warp / kWarpsN;
  const int group = lane / 4, thread_in_group = lane % 4;
  const std::int64_t row_tile = std::int64_t(blockIdx.x) * kWarpsN + warp_n;
  const std::int64_t row_tiles = (args.n + kTileRows - 1) / kTileRows;

  float accumulators[kMTiles][4];
#pragma unroll
  for (int tile = 0; tile < kMTiles; ++tile)
    for (int i = 0; i < 4; ++i) accumulators[tile][i] = 0.0f;

  if (row_tile < row_tiles) {
    const int chunk_begin = int(std::int64_t(args.chunks) * warp_k / kWarpsK);
    const int chunk_end = int(std::int64_t(args.chunks) * (warp_k + 1) / kWarpsK);
    const uint4* codes = static_cast<const uint4*>(args.codes) + (row_tile * args.chunks) * 32 + lane;
    const uint2* scales = static_cast<const uint2*>(args.scales) + (row_tile * args.chunks) * 8 + group;
    const std::uint16_t* activations = static_cast<const std::uint16_t*>(args.activations);

    for (int chunk0 = chunk_begin; chunk0 < chunk_end; chunk0 += kUnroll) {
      // Issue loads: kUnroll chunks of codes and scales in flight.
      uint4 code_words[kUnroll];
      uint2 scale_words[kUnroll];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        if (chunk0 + u < chunk_end) {
          code_words[u] = load_streaming(codes + std::int64_t(chunk0 + u) * 32);
          scale_words[u] = __ldg(scales + std::int64_t(chunk0 + u) * 8);
        } else {
          code_words[u] = make_uint4(0, 0, 0, 0);
          scale_words[u] = make_uint2(0, 0);
        }
      }
      // Decode and multiply, block by block.
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        if (chunk0 + u >= chunk_end) break;
        const std::uint32_t words[4] = {code_words[u].x, code_words[u].y, code_words[u].z, code_words[u].w};
#pragma unroll
        for (int block = 0; block < kBlocksPerChunk; ++block) {
          const int k0 = ((chunk0 + u) * kBlocksPerChunk + block) * 16;
          if (k0 >= args.k) break;  // K padding: zero weights, and activations must not be read
          const unsigned scale_g = (scale_words[u].x >> (8 * block)) & 0xFF;
          const unsigned scale_g8 = (scale_words[u].y >> (8 * block)) & 0xFF;
          const std::uint32_t pair_g = std::uint32_t(scale_table[scale_g]) * 0x10001u;
          const std::uint32_t pair_g8 = std::uint32_t(scale_table[scale_g8]) * 0x10001u;
          std::uint32_t fragment[4];
          decode_fragment(words[block], pair_g, pair_g8, fragment);
#pragma unroll
          for (int tile = 0; tile < kMTiles; ++tile) {
            const int row = tile * 8 + group;
            std::uint32_t b0 = 0, b1 = 0;
            if (row < args.m) {
              const std::uint16_t* source = activations + std::int64_t(row) * args.activation_stride + k0 + 2 * thread_in_group;
              b0 = __ldg(reinterpret_cast<const unsigned int*>(source));
              b1 = __ldg(reinterpret_cast<const unsigned int*>(source + 8));
            }
            mma_bf16(accumulators[tile], fragment, b0, b1);
          }
        }
      }
    }
  }

  // Reduce the kWarpsK partial sums through shared memory. C fragment: c0,c1 are (row g, cols 2t,
  // 2t+1), c2,c3 are (row g+8, same cols); rows are weight rows, cols activation rows.
#pragma unroll
  for (int tile = 0; tile < kMTiles; ++tile) {
    const int col = tile * 8 + 2 * thread_in_group;
    const int row = warp_n * kTileRows + group;
    partial[warp_k][row][col] = accumulators[tile][0];
    partial[warp_k][row][col + 1] = accumulators[tile][1];
    partial[warp_k][row + 8][col] = accumulators[tile][2];
    partial[warp_k][row + 8][col + 1] = accumulators[tile][3];
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
    store_output(args.out, std::int64_t(col) * args.out_stride + n, args.out_kind, scale * sum);
  }
}

template <int kMTiles, int kWarpsN, int kWarpsK>
cudaError_t launch(const DecodeGemmArgs& args, cudaStream_t stream) {
  const std::int64_t row_tiles = (args.n + kTileRows - 1) / kTileRows;
  const dim3 grid(unsigned((row_tiles + kWarpsN - 1) / kWarpsN));
  decode_gemm_kernel<kMTiles, kWarpsN, kWarpsK><<<grid, 32 * kWarpsN * kWarpsK, 0, stream>>>(args);
  return cudaGetLastError();
}

// The compiled shapes. NOTE: keep in sync with decode_tuning.cpp's choices (tests check it).
#define FP4GEMM_DECODE_SHAPES(X) \
  X(1, 1, 8) X(1, 2, 4) X(1, 4, 2) \
  X(2, 1, 8) X(2, 2, 4) X(2, 4, 2) \
  X(4, 2, 4) X(4, 4, 2) X(4, 8, 1) \
  X(8, 2, 4) X(8, 4, 2) X(8, 8, 1)

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
