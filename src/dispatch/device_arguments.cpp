#include "dispatch/device_arguments.hpp"

#include <cctype>

#include "fp4gemm/error.hpp"

namespace fp4gemm::dispatch {
namespace {

bool all_digits(const std::string& text) {
  if (text.empty()) return false;
  for (char c : text)
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

}  // namespace

DeviceInfo simulated_device(int sm, int cublaslt_version) {
  if (sm <= 0) return probe_cpu();
  if (sm < 30 || sm > 200) {
    throw_invalid("--simulate-sm " + std::to_string(sm) + " is not a compute capability; pass e.g. 80, 89, 90, 100, 103, 120 or 121");
  }
  DeviceInfo device;
  device.kind = DeviceInfo::Kind::cuda;
  device.name = "simulated sm_" + std::to_string(sm);
  device.sm_major = sm / 10;
  device.sm_minor = sm % 10;
  device.multiprocessors = 132;
  device.memory_bytes = std::int64_t(80) << 30;
  device.free_memory_bytes = device.memory_bytes;
  device.cuda_runtime_version = 13000;
  device.cublaslt_version = cublaslt_version;
  device.probed = false;
  return device;
}

void apply_device_arguments(int& device_index, std::optional<DeviceInfo>& simulated, const std::string& device, int simulate_sm,
                            int simulate_cublaslt) {
  if (simulate_sm > 0) {
    simulated = simulated_device(simulate_sm, simulate_cublaslt);
    return;
  }
  if (device.empty() || device == "auto") {
    device_index = RunnerOptions::kFirstGpu;
  } else if (device == "cpu") {
    device_index = RunnerOptions::kCpuOnly;
  } else if (all_digits(device)) {
    device_index = std::stoi(device);
  } else if (device.rfind("cuda:", 0) == 0 && all_digits(device.substr(5))) {
    device_index = std::stoi(device.substr(5));
  } else {
    throw_invalid("--device '" + device + "' is not a device; pass auto, cpu, a CUDA ordinal such as 0, or cuda:0");
  }
}

void apply_device_arguments(RunnerOptions& options, const std::string& device, int simulate_sm, int simulate_cublaslt) {
  apply_device_arguments(options.device, options.simulated_device, device, simulate_sm, simulate_cublaslt);
}

}  // namespace fp4gemm::dispatch
