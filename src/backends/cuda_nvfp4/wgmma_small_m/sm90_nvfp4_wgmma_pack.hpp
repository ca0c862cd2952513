#pragma once
// Launcher of the activation pack for the wgmma kernel; the layout is in activation_pack_layout.hpp.
#include <cuda_runtime.h>

#include <cstdint>

#include "backends/cuda_nvfp4/activation_pack_layout.hpp"

namespace fp4gemm::cuda_nvfp4 {

// BF16 activations [m, stride] (device memory; 16-byte aligned, stride a multiple of 8, as the
// launcher stages any other view; cudaErrorMisalignedAddress otherwise) -> packed (chunks * tokens
// * 128 bytes per block of `tokens` rows, the blocks one after another: the small-M kernel's one
// block, the wide prefill kernel's ceil(m / tokens); 16-byte aligned). `programmatic`: launched with programmatic dependent
// launch (programmatic_launch.cuh). The kernel also zeroes the `flag_count` words at `flags` (the
// wgmma kernel's stream-K flags; none when 0) once the previous kernel is done.
cudaError_t launch_pack_activations(const std::uint16_t* activations, std::int64_t stride, int m, int k, int tokens,
                                    int chunks, void* packed, unsigned* flags, int flag_count, bool programmatic, cudaStream_t stream);

}  // namespace fp4gemm::cuda_nvfp4
