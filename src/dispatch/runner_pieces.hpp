#pragma once
// Pieces of the dense runner that the MoE runner (src/moe/) uses as they are.
#include <exception>
#include <optional>
#include <string>

#include "dispatch/log.hpp"
#include "fp4gemm/device.hpp"
#include "fp4gemm/dispatch/explanation.hpp"
#include "fp4gemm/dispatch/profile.hpp"

namespace fp4gemm::dispatch {

// The primary device: `simulated` when given; the CPU (`host`) for RunnerOptions::kCpuOnly; else
// the GPU of that ordinal (kFirstGpu: the first, or the CPU without one). Throws Error on an
// ordinal that does not exist.
DeviceInfo select_primary_device(int device, const std::optional<DeviceInfo>& simulated, const DeviceInfo& host);

// A backend failure as one sentence: the exception's message, or what kind of throw it was.
std::string describe_failure(const std::exception_ptr& failure);

// A runner's tuned profile: the file (when a path was given) and why it does not apply here.
struct LoadedProfile {
  std::optional<TunedProfile> profile;
  std::string mismatch;  // empty when the profile applies to the primary device
};
// Loads `path` (empty: no profile) and warns, once per process, of deprecated backend names in
// it and of metadata that does not match `primary`. Throws Error(io) when the file cannot be read.
LoadedProfile load_runner_profile(const std::string& path, const DeviceInfo& primary, const LogSink& log);
// Starts a ProfileReport: the sentence for no profile or an invalid one. True when the profile is
// valid here and its entries may be looked up.
bool profile_applies(const LoadedProfile& loaded, ProfileReport& report);

}  // namespace fp4gemm::dispatch
