#include "backends/cublaslt/cublaslt_requirements.hpp"

#include "fp4gemm/format/scale_layout.hpp"

namespace fp4gemm::cublaslt {

std::string version_text(int version) {
  return std::to_string(version / 10000) + "." + std::to_string((version / 100) % 100) + "." + std::to_string(version % 100);
}

bool is_supported_sm(int sm) { return sm == 100 || sm == 103 || sm == 120 || sm == 121; }

CheckResult check_device_requirements(const DeviceInfo& device) {
  if (!device.is_cuda()) return CheckResult::fail("needs a CUDA GPU of SM 10.0, 10.3, 12.0 or 12.1; this device is the CPU");
  if (!is_supported_sm(device.sm())) {
    return CheckResult::fail("not supported by cuBLASLt on sm_" + std::to_string(device.sm()) +
                             ": its NVFP4 block-scaled matmul needs the FP4 tensor cores of SM 10.0, 10.3, 12.0 or 12.1");
  }
  if (device.cublaslt_version == 0) {
    return CheckResult::fail("the cuBLASLt library was not found at run time; install the CUDA 12.8+ cuBLAS "
                             "libraries or put them on the library path");
  }
  const bool newer_target = device.sm() == 103 || device.sm() == 121;
  const int minimum = newer_target ? kMinimumVersionSm103Sm121 : kMinimumVersion;
  if (device.cublaslt_version < minimum) {
    return CheckResult::fail("cuBLASLt " + version_text(device.cublaslt_version) + " is too old: NVFP4 matmul on sm_" +
                             std::to_string(device.sm()) + " needs cuBLASLt " + version_text(minimum) +
                             " or newer (CUDA " + (newer_target ? "12.9" : "12.8") + "); upgrade the CUDA toolkit");
  }
  return CheckResult::pass();
}

CheckResult check_problem_requirements(const GemmProblem& problem, const DeviceInfo& device) {
  if (problem.activation != ActivationType::nvfp4) {
    return CheckResult::fail(std::string("needs nvfp4 activations (W4A4: A quantized with its own VEC16 scales); this "
                                         "problem has ") +
                             to_string(problem.activation) + " activations (W4A16)");
  }
  // NOTE: packed FP4 rows must start on 16-byte boundaries (cuBLASLt's minimum operand alignment),
  // i.e. K a multiple of 32; output rows likewise, i.e. N x element size a multiple of 16 bytes.
  if (problem.k % 32 != 0) {
    return CheckResult::fail("needs K to be a multiple of 32 (16-byte rows of packed FP4); K = " + std::to_string(problem.k));
  }
  const std::int64_t output_row_bytes = problem.n * std::int64_t(dtype_size(problem.output));
  if (output_row_bytes % 16 != 0) {
    return CheckResult::fail("needs output rows of a multiple of 16 bytes; N = " + std::to_string(problem.n) + " " +
                             to_string(problem.output) + " values are " + std::to_string(output_row_bytes) + " bytes");
  }
  if (problem.m > INT32_MAX || problem.n > INT32_MAX || problem.k > INT32_MAX) {
    return CheckResult::fail("cuBLASLt takes 32-bit dimensions; M, N and K must be below 2^31");
  }
  const std::int64_t needed = prepared_weight_bytes(problem.n, problem.k) + kWorkspaceBytes +
                              scale_layout::swizzled_bytes(problem.m, problem.k);
  if (device.free_memory_bytes > 0 && needed > device.free_memory_bytes) {
    return CheckResult::fail("needs " + std::to_string(needed >> 20) + " MiB of GPU memory (weight, scales, workspace) but " +
                             std::to_string(device.free_memory_bytes >> 20) + " MiB are free");
  }
  return CheckResult::pass();
}

std::int64_t prepared_weight_bytes(std::int64_t rows, std::int64_t cols) {
  return rows * (cols / 2) + scale_layout::swizzled_bytes(rows, cols);
}

}  // namespace fp4gemm::cublaslt
