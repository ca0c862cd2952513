#pragma once
// The `cpu` backend's kernel for BF16-exact activations (W4A16 BF16, and W4A4 after an exact
// decode) on CPUs with AVX512-BF16 (AMD Zen 4+, Intel Sapphire Rapids+).
//
// Why a second kernel: the Highway kernel spends two FP32 multiply-class instructions per 16
// weights (scale, then FMA) and is bound by that pipe at ~0.9 ms for a 12288 x 4096 GEMV on the
// 2-core EPYC. Here the 16 decoded values of a block stay unscaled BF16, `vdpbf16ps` multiplies
// 32 of them by 32 activations (lanes 0-7 hold block 2i's pairs, 8-15 block 2i+1's), and one FMA
// applies both blocks' scales: half the multiply-pipe work. Highway 1.0 (Debian 12) has no BF16
// target, so this file uses compiler intrinsics under a function target attribute and is only
// called after a run-time CPU check.
//
// Numerics: e2m1 values and BF16 activations multiply exactly into FP32; vdpbf16ps treats BF16
// subnormal inputs (|x| < 2^-126) as zero and flushes subnormal results, which moves a result by
// at most ~1e-38 per term (documented in ARCHITECTURE.md).
#include <cstdint>

#include "backends/cpu/cpu_layout.hpp"

namespace fp4gemm::cpu_kernels {

// True when this CPU and OS run AVX512-F/BW/BF16 (checked once) and FP4GEMM_CPU_NO_BF16 is unset
// or 0 (set it to compare with, or fall back to, the Highway kernel).
bool bf16_kernel_available();

// As fused_small_m, with BF16 activations (bit patterns) [rows, weight.padded_k()], zero padded.
// Call only when bf16_kernel_available().
void fused_small_m_bf16(const CpuWeight& weight, const std::uint16_t* activations, std::int64_t rows,
                        std::int64_t tile_begin, std::int64_t tile_end, float* accumulators);

}  // namespace fp4gemm::cpu_kernels
