#pragma once
// What `cuda_nvfp4` would run for a problem on a device, in words, for `fp4gemm explain`: the
// kernel, its launch shape and the measured rule behind each choice (decode_tuning.hpp). Host
// code only, so it also answers for simulated devices and in builds without CUDA.
#include <string>

#include "backends/cuda_nvfp4/mma_small_m/sm80_nvfp4_mma_tuning.hpp"
#include "fp4gemm/device.hpp"
#include "fp4gemm/types.hpp"

namespace fp4gemm::cuda_nvfp4 {

// One line; "cannot plan: …" when a tuning knob (FP4GEMM_DECODE_KERNEL, FP4GEMM_DECODE_SHAPE,
// FP4GEMM_WGMMA_SHAPE, FP4GEMM_PDL) is malformed, which run() would refuse the same way. The
// mma.sync shape weighs the grid's waves only with `resident_ctas_per_sm` (the compiled kernels'
// occupancy on a probed GPU, which the CUDA backend's kernel_plan passes); whether the grid fills
// the GPU for PDL the backend adds.
std::string describe_kernel_plan(const GemmProblem& problem, const DeviceInfo& device,
                                 const ResidentCtasPerSm& resident_ctas_per_sm = nullptr);

}  // namespace fp4gemm::cuda_nvfp4
