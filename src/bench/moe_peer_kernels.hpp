#pragma once
// The small kernels around the GPU MoE peers' library GEMMs: gathering tokens by expert, SiLU·mul,
// FP8 quantization with a per-tensor scale found on the device, and the weighted combine. Every
// one is stream-ordered with no host synchronisation, so a peer's call captures into a CUDA graph.
#include <cuda_runtime_api.h>

#include <cstdint>

namespace fp4gemm::bench {

// out [rows, hidden] (BF16) = x [gather[r], :] for each row r.
void gather_rows_bf16(const std::uint16_t* x, const std::int32_t* gather, std::int64_t rows, std::int64_t hidden,
                      std::uint16_t* out, cudaStream_t stream);

// *amax = max(*amax, max |x|) over `count` BF16 values (FP32 bits, atomic; clear it first).
void absmax_bf16(const std::uint16_t* x, std::int64_t count, float* amax, cudaStream_t stream);

// out [rows, hidden] (E4M3) = x [gather[r], :] / scale, scale = *amax / 448 (1 when *amax is 0),
// written to *scale for cuBLASLt's scale pointer. gather == nullptr: rows of x in order.
void quantize_rows_e4m3(const std::uint16_t* x, const std::int32_t* gather, std::int64_t rows, std::int64_t hidden,
                        const float* amax, float* scale, std::uint8_t* out, cudaStream_t stream);

// h [rows, inter] (BF16) = BF16(SiLU(gate) · up) from gate_up [rows, 2·inter] (BF16, gate first);
// with `amax`, also *amax = max(*amax, max |h|).
void silu_mul_bf16(const std::uint16_t* gate_up, std::int64_t rows, std::int64_t inter, std::uint16_t* h, float* amax,
                   cudaStream_t stream);

// out [tokens, hidden] (BF16) = Σ_s weights[t·k + s] · y [rows[t·k + s], :] (FP32 sum, slots in order).
void combine_bf16(const std::uint16_t* y, const std::int32_t* rows, const float* weights, std::int64_t tokens, int top_k,
                  std::int64_t hidden, std::uint16_t* out, cudaStream_t stream);

}  // namespace fp4gemm::bench
