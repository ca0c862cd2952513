#pragma once
// What a backend needs to know about the device it would run on. Probed from the machine, or
// built by hand so tests can simulate any GPU.
#include <cstdint>
#include <string>
#include <vector>

namespace fp4gemm {

struct DeviceInfo {
  enum class Kind { cpu, cuda };
  Kind kind = Kind::cpu;
  int index = 0;                  // CUDA ordinal; 0 for the CPU
  std::string name;               // "NVIDIA H200", or the CPU model
  int sm_major = 0;               // compute capability (CUDA only)
  int sm_minor = 0;
  int multiprocessors = 0;        // SMs, or CPU cores
  std::int64_t memory_bytes = 0;  // device memory, or host RAM
  std::int64_t free_memory_bytes = 0;
  std::string simd;               // CPU only: best SIMD target, e.g. "AVX3" (AVX-512)
  // Libraries as found at run time (0 when absent), so checks can say "cuBLASLt too old".
  int cuda_runtime_version = 0;
  int cublaslt_version = 0;
  // True when filled in from the hardware by probe_cuda_devices(). Hand-built (simulated) devices
  // leave it false: checks must then decide from the fields alone and never touch a GPU.
  bool probed = false;

  bool is_cuda() const { return kind == Kind::cuda; }
  int sm() const { return sm_major * 10 + sm_minor; }  // 90 for sm_90
  std::string to_string() const;
};

DeviceInfo probe_cpu();
// Every CUDA device visible to this process; empty (never an exception) without a GPU or driver.
std::vector<DeviceInfo> probe_cuda_devices();
// Why there is no CUDA device, when probe_cuda_devices() is empty ("no CUDA driver", ...).
std::string cuda_unavailable_reason();

}  // namespace fp4gemm
