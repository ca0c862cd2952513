#pragma once
// SIMD kernels of the `cpu` backend (Highway, dispatched at run time to the best target).
#include <cstdint>

#include "backends/cpu/cpu_layout.hpp"

namespace fp4gemm::cpu_kernels {

// accumulators[m, n] = sum_k activations[m, k] * w[n, k] for m < rows and the weight rows of
// layout tiles [tile_begin, tile_end). `activations` is FP32 [rows, weight.padded_k()] with zero
// padding; the accumulator row stride is weight.padded_rows().
void fused_small_m(const CpuWeight& weight, const float* activations, std::int64_t rows, std::int64_t tile_begin,
                   std::int64_t tile_end, float* accumulators);

// Decode weight rows [row_begin, row_end) to FP32 (block scales applied), [rows, K] row-major.
void decode_rows(const CpuWeight& weight, std::int64_t row_begin, std::int64_t row_end, float* out);

// Name of the SIMD target the dispatcher picked ("AVX3", "AVX2", ...).
const char* active_target();

// The largest M for which fused_small_m beats decoded panels times SGEMM on that target
// (cpu_tuning.hpp).
std::int64_t fused_max_m();

}  // namespace fp4gemm::cpu_kernels
