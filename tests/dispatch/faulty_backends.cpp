#include "dispatch/faulty_backends.hpp"

#include <cmath>
#include <cstring>
#include <new>

#include "backends/cublaslt/cublaslt_requirements.hpp"
#include "fp4gemm/error.hpp"
#include "fp4gemm/format/half.hpp"

namespace fp4gemm::testing {
namespace {

void fill_rows(const MutableDenseView& out, std::int64_t rows, float value) {
  for (std::int64_t row = 0; row < rows; ++row)
    for (std::int64_t col = 0; col < out.cols; ++col) {
      const std::int64_t index = row * out.stride() + col;
      switch (out.dtype) {
        case DType::f32: static_cast<float*>(out.data)[index] = value; break;
        case DType::bf16: static_cast<std::uint16_t*>(out.data)[index] = float_to_bf16(value); break;
        case DType::f16: static_cast<std::uint16_t*>(out.data)[index] = float_to_fp16(value); break;
      }
    }
}

CheckResult gpu_sm80_or_newer(const DeviceInfo& device) {
  if (!device.is_cuda()) return CheckResult::fail("needs a CUDA GPU");
  if (device.sm() < 80) return CheckResult::fail("needs SM 8.0 or newer");
  return CheckResult::pass();
}

}  // namespace

std::unique_ptr<PreparedWeight> FaultyBackend::prepare(const Nvfp4View& weight, const DeviceInfo& device) {
  ++prepares;
  if (fault_ == Fault::throw_in_prepare) {
    throw Error(ErrorCode::backend_failure, name_ + ": uploading the weight failed: out of memory (injected)");
  }
  return reference_.prepare(weight, device);
}

void FaultyBackend::run(const ActivationView& a, const PreparedWeight& weight, float alpha, const MutableDenseView& out,
                        const RunContext& context) {
  ++runs;
  switch (fault_) {
    case Fault::none:
    case Fault::throw_in_prepare:
      reference_.run(a, weight, alpha, out, context);
      return;
    case Fault::zeros: fill_rows(out, out.rows, 0.0f); return;
    case Fault::nan: fill_rows(out, out.rows, NAN); return;
    case Fault::half_output:
      reference_.run(a, weight, alpha, out, context);
      // Re-poison the second half as if it had never been written.
      for (std::int64_t row = out.rows / 2; row < out.rows; ++row)
        std::memset(static_cast<char*>(out.data) + row * out.stride() * dtype_size(out.dtype), 0xFF,
                    std::size_t(out.cols) * dtype_size(out.dtype));
      return;
    case Fault::throw_in_run:
      throw Error(ErrorCode::backend_failure, name_ + ": cublasLtMatmul failed: CUBLAS_STATUS_EXECUTION_FAILED (injected)");
    case Fault::partial_then_throw:
      fill_rows(out, out.rows / 2, 12345.0f);
      throw Error(ErrorCode::backend_failure, name_ + ": kernel launch failed half way (injected)");
    case Fault::out_of_memory: throw std::bad_alloc();
    case Fault::foreign_exception: throw 42;
    case Fault::unrecoverable:
      throw Error(ErrorCode::unrecoverable, name_ + ": an illegal memory access was encountered (injected)");
  }
}

std::shared_ptr<Backend> cublaslt_stand_in() {
  return std::make_shared<StandInBackend>("cublaslt", Memory::cuda, cublaslt::check_device_requirements,
                                          cublaslt::check_problem_requirements);
}

std::shared_ptr<Backend> cuda_nvfp4_stand_in() {
  return std::make_shared<StandInBackend>("cuda_nvfp4", Memory::cuda, gpu_sm80_or_newer,
                                          [](const GemmProblem& problem, const DeviceInfo& device) {
                                            if (problem.m > 64 && device.sm() != 90)
                                              return CheckResult::fail("serves M <= 64 here (its prefill kernel is SM 9.0 only)");
                                            if (problem.activation == ActivationType::f32)
                                              return CheckResult::fail("takes BF16 or NVFP4 activations");
                                            return CheckResult::pass();
                                          });
}

std::shared_ptr<Backend> cuda_dequant_cublas_stand_in() {
  return std::make_shared<StandInBackend>("cuda_dequant_cublas", Memory::cuda, gpu_sm80_or_newer,
                                          [](const GemmProblem&, const DeviceInfo&) { return CheckResult::pass(); });
}

std::shared_ptr<Backend> cuda_bf16_copy_stand_in() {
  return std::make_shared<StandInBackend>(
      "cuda_bf16_copy", Memory::cuda, gpu_sm80_or_newer, [](const GemmProblem&, const DeviceInfo&) { return CheckResult::pass(); },
      StandInBackend::KernelName{}, true);
}

DeviceInfo simulated_gpu(int sm_major, int sm_minor, int cublaslt_version, const std::string& name) {
  DeviceInfo device;
  device.kind = DeviceInfo::Kind::cuda;
  device.index = 0;
  device.name = name.empty() ? "simulated sm_" + std::to_string(sm_major * 10 + sm_minor) : name;
  device.sm_major = sm_major;
  device.sm_minor = sm_minor;
  device.multiprocessors = 100;
  device.memory_bytes = std::int64_t(80) << 30;
  device.free_memory_bytes = std::int64_t(79) << 30;
  device.cuda_runtime_version = 13000;
  device.cublaslt_version = cublaslt_version;
  device.probed = false;
  return device;
}

}  // namespace fp4gemm::testing
