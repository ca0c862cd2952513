#include <unistd.h>

#include <fstream>
#include <sstream>
#include <thread>

#include <hwy/targets.h>

#include "fp4gemm/device.hpp"

#ifdef FP4GEMM_WITH_CUDA
#include <cublasLt.h>
#include <cuda_runtime_api.h>
#endif

namespace fp4gemm {
namespace {

std::string cpu_model() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(colon + 2);
    }
  }
  return "unknown CPU";
}

std::string best_simd_target() {
  const std::int64_t targets = hwy::SupportedTargets();
  // Highway's target bits: a lower bit is a better target.
  for (std::int64_t bit = 1; bit != 0 && bit <= targets; bit <<= 1)
    if (targets & bit) return hwy::TargetName(bit);
  return "scalar";
}

}  // namespace

std::string DeviceInfo::to_string() const {
  std::ostringstream text;
  if (!is_cuda()) {
    text << "cpu: " << name << ", " << multiprocessors << " cores, SIMD " << simd;
  } else {
    text << "cuda:" << index << ": " << name << ", SM " << sm_major << "." << sm_minor << ", " << multiprocessors
         << " SMs, " << (memory_bytes >> 20) << " MiB";
  }
  return text.str();
}

DeviceInfo probe_cpu() {
  DeviceInfo cpu;
  cpu.kind = DeviceInfo::Kind::cpu;
  cpu.name = cpu_model();
  cpu.multiprocessors = int(std::thread::hardware_concurrency());
  cpu.memory_bytes = std::int64_t(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGESIZE);
  cpu.free_memory_bytes = std::int64_t(sysconf(_SC_AVPHYS_PAGES)) * sysconf(_SC_PAGESIZE);
  cpu.simd = best_simd_target();
  return cpu;
}

#ifdef FP4GEMM_WITH_CUDA
std::string cuda_unavailable_reason() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) return std::string("no usable CUDA device: ") + cudaGetErrorString(status);
  if (count == 0) return "no CUDA device is visible to this process";
  return "";
}

std::vector<DeviceInfo> probe_cuda_devices() {
  std::vector<DeviceInfo> devices;
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // clear the non-sticky error so later probes start clean
    return devices;
  }
  int runtime_version = 0;
  cudaRuntimeGetVersion(&runtime_version);
  for (int index = 0; index < count; ++index) {
    cudaDeviceProp properties{};
    if (cudaGetDeviceProperties(&properties, index) != cudaSuccess) continue;
    DeviceInfo device;
    device.kind = DeviceInfo::Kind::cuda;
    device.index = index;
    device.name = properties.name;
    device.sm_major = properties.major;
    device.sm_minor = properties.minor;
    device.multiprocessors = properties.multiProcessorCount;
    device.memory_bytes = std::int64_t(properties.totalGlobalMem);
    int previous = 0;
    cudaGetDevice(&previous);
    if (cudaSetDevice(index) == cudaSuccess) {
      size_t free_bytes = 0, total_bytes = 0;
      if (cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess) device.free_memory_bytes = std::int64_t(free_bytes);
      cudaSetDevice(previous);
    }
    device.cuda_runtime_version = runtime_version;
    device.cublaslt_version = int(cublasLtGetVersion());
    device.probed = true;
    devices.push_back(device);
  }
  return devices;
}
#else
std::string cuda_unavailable_reason() { return "this build has no CUDA support (configured with FP4GEMM_CUDA=OFF or no nvcc)"; }
std::vector<DeviceInfo> probe_cuda_devices() { return {}; }
#endif

}  // namespace fp4gemm
