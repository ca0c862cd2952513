#pragma once
// Turning command-line device arguments into RunnerOptions (or the MoE runner's), shared by
// `explain`, `doctor` and the Python package.
#include <optional>
#include <string>

#include "fp4gemm/runner.hpp"

namespace fp4gemm::dispatch {

// A hand-built GPU of compute capability `sm` (e.g. 90, 100, 121) for simulation: named
// "simulated sm_90", not probed (so no check touches a GPU), 80 GiB, CUDA 13.0, and the given
// cuBLASLt version (major*10000 + minor*100 + patch; 0 means absent). sm 0 means "no GPU".
DeviceInfo simulated_device(int sm, int cublaslt_version);

// `device`: "auto" (the first GPU, else the CPU), "cpu", "I" or "cuda:I". A positive
// `simulate_sm` replaces the device with simulated_device(simulate_sm, simulate_cublaslt).
// Throws Error(invalid_argument) with the accepted forms on anything else.
void apply_device_arguments(RunnerOptions& options, const std::string& device, int simulate_sm, int simulate_cublaslt);
// The same into a runner's device index and simulated device (moe::MoeRunnerOptions has both).
void apply_device_arguments(int& device_index, std::optional<DeviceInfo>& simulated, const std::string& device, int simulate_sm,
                            int simulate_cublaslt);

}  // namespace fp4gemm::dispatch
