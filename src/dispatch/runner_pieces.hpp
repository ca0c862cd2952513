#pragma once
// Pieces of the dense runner that the MoE runner (src/moe/) uses as they are.
#include <exception>
#include <optional>
#include <string>

#include "fp4gemm/device.hpp"

namespace fp4gemm::dispatch {

// The primary device: `simulated` when given; the CPU (`host`) for RunnerOptions::kCpuOnly; else
// the GPU of that ordinal (kFirstGpu: the first, or the CPU without one). Throws Error on an
// ordinal that does not exist.
DeviceInfo select_primary_device(int device, const std::optional<DeviceInfo>& simulated, const DeviceInfo& host);

// A backend failure as one sentence: the exception's message, or what kind of throw it was.
std::string describe_failure(const std::exception_ptr& failure);

}  // namespace fp4gemm::dispatch
