// `cublaslt` backend: checks (static + heuristic probe), weight preparation (codes and swizzled
// scales uploaded once), and the matmul.
#include "backends/cublaslt/cublaslt_backend.hpp"

#include <bit>

#include "backends/cublaslt/cublaslt_descriptors.hpp"
#include "backends/cublaslt/cublaslt_requirements.hpp"
#include "backends/cublaslt/cublaslt_swizzle.hpp"
#include "backends/cuda_common/cuda_check.hpp"
#include "backends/cuda_common/device_buffer.hpp"
#include "fp4gemm/format/scale_layout.hpp"

namespace fp4gemm {
namespace {

// The weight on the GPU: packed codes [N, K/2] and scales in the 128x4 swizzled layout.
struct CublasLtWeight final : PreparedWeight {
  cuda::DeviceBuffer codes;
  cuda::DeviceBuffer scales;
};

// Checks probe a representative shape per power-of-two M bucket: support does not hinge on the
// exact M, and one probe per bucket keeps the per-call check cheap.
std::int64_t m_bucket(std::int64_t m) { return std::int64_t(std::bit_ceil(std::uint64_t(std::max<std::int64_t>(m, 1)))); }

}  // namespace

CublasLtBackend::~CublasLtBackend() {
  for (auto& [device, handle] : handles_) {
    int previous = 0;
    if (cudaGetDevice(&previous) == cudaSuccess && cudaSetDevice(device) == cudaSuccess) {
      cublasLtDestroy(handle);
      cudaSetDevice(previous);
    }
  }
}

std::string CublasLtBackend::summary() const {
  return "native NVFP4 W4A4 through cuBLASLt (E2M1 operands, VEC16 UE4M3 swizzled scales) on SM 10.0/10.3/12.0/12.1; "
         "not yet run on Blackwell by this project";
}

cublasLtHandle_t CublasLtBackend::handle_for(int device) const {
  if (auto found = handles_.find(device); found != handles_.end()) return found->second;
  const cuda::DeviceGuard guard(device);
  cublasLtHandle_t handle = nullptr;
  cuda::check_cublas(cublasLtCreate(&handle), "cublaslt: creating a cuBLASLt handle");
  handles_.emplace(device, handle);
  return handle;
}

// The heuristic query reads no data, so one small aligned buffer serves as both scale pointers.
constexpr std::size_t kProbeScaleBytes = 512;

CublasLtBackend::Algorithm CublasLtBackend::find_algorithm(int device, std::int64_t m, std::int64_t n, std::int64_t k,
                                                           DType output, std::int64_t output_stride,
                                                           const cublaslt::Nvfp4MatmulDescriptors* with_pointers) const {
  const auto key = std::make_tuple(device, m, n, k, output, output_stride);
  if (auto found = algorithms_.find(key); found != algorithms_.end()) return found->second;
  const cuda::DeviceGuard guard(device);
  const cublasLtHandle_t handle = handle_for(device);
  std::unique_ptr<cublaslt::Nvfp4MatmulDescriptors> probe_only;
  if (with_pointers == nullptr) {
    probe_only = std::make_unique<cublaslt::Nvfp4MatmulDescriptors>(m, n, k, output, output_stride);
    auto scales = probe_scales_.find(device);
    if (scales == probe_scales_.end()) {
      scales = probe_scales_.emplace(device, cuda::DeviceBuffer(kProbeScaleBytes, "cublaslt: probe scales")).first;
    }
    probe_only->set_scale_pointers(scales->second.data(), scales->second.data());
  }
  const cublaslt::Nvfp4MatmulDescriptors& descriptors = with_pointers ? *with_pointers : *probe_only;
  cublasLtMatmulPreference_t preference = nullptr;
  cuda::check_cublas(cublasLtMatmulPreferenceCreate(&preference), "cublaslt: creating a matmul preference");
  const std::uint64_t workspace = cublaslt::kWorkspaceBytes;
  cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace, sizeof workspace);
  cublasLtMatmulHeuristicResult_t result{};
  int found_count = 0;
  Algorithm algorithm;
  algorithm.status = cublasLtMatmulAlgoGetHeuristic(handle, descriptors.operation, descriptors.weight,
                                                    descriptors.activation, descriptors.output, descriptors.output,
                                                    preference, 1, &result, &found_count);
  cublasLtMatmulPreferenceDestroy(preference);
  if (algorithm.status == CUBLAS_STATUS_SUCCESS && found_count == 0) algorithm.status = CUBLAS_STATUS_NOT_SUPPORTED;
  if (algorithm.status == CUBLAS_STATUS_SUCCESS) algorithm.algorithm = result.algo;
  algorithms_.emplace(key, algorithm);
  return algorithm;
}

CheckResult CublasLtBackend::probe(const DeviceInfo& device, const GemmProblem& problem) const {
  try {
    std::lock_guard<std::mutex> lock(mutex_);
    const Algorithm algorithm =
        find_algorithm(device.index, m_bucket(problem.m), problem.n, problem.k, problem.output, problem.n, nullptr);
    if (algorithm.status == CUBLAS_STATUS_SUCCESS) return CheckResult::pass();
    return CheckResult::fail("cuBLASLt " + cublaslt::version_text(device.cublaslt_version) +
                             "'s heuristic query (cublasLtMatmulAlgoGetHeuristic) answered " +
                             cublaslt::status_text(algorithm.status));
  } catch (const Error& error) {
    return CheckResult::fail(std::string("could not query cuBLASLt: ") + error.what());
  }
}

CheckResult CublasLtBackend::check_device(const DeviceInfo& device) const {
  CheckResult requirements = cublaslt::check_device_requirements(device);
  if (requirements) {
    const std::string missing_code = cublaslt::missing_kernel_code_reason(device);
    if (!missing_code.empty()) requirements = CheckResult::fail(missing_code);
  }
  // Simulated devices, and real ones without a usable library, are decided from the fields alone.
  if (!device.probed || !device.is_cuda() || device.cublaslt_version < cublaslt::kMinimumVersion) return requirements;
  // A real GPU: ask cuBLASLt itself with a representative W4A4 problem, so the reason quotes it
  // (on the H200: "not supported by cuBLASLt on sm_90 ... answered CUBLAS_STATUS_NOT_SUPPORTED").
  const CheckResult answer = probe(device, {128, 128, 128, ActivationType::nvfp4, DType::bf16});
  if (!requirements) return answer ? requirements : CheckResult::fail(requirements.reason + " (" + answer.reason + ")");
  return answer;
}

CheckResult CublasLtBackend::check_problem(const GemmProblem& problem, const DeviceInfo& device) const {
  const CheckResult requirements = cublaslt::check_problem_requirements(problem, device);
  if (!requirements || !device.probed) return requirements;
  return probe(device, problem);
}

WeightResidency CublasLtBackend::residency(std::int64_t rows, std::int64_t cols) const {
  return {rows * (cols / 2) + scale_layout::swizzled_bytes(rows, cols), Memory::cuda, false,
          "the checkpoint NVFP4 codes and E4M3 scales in cuBLASLt's 128x4 swizzled layout (0.5625 B/element, scale rows "
          "padded to 128)"};
}

std::int64_t CublasLtBackend::workspace_bytes(const GemmProblem& problem, const DeviceInfo&) const {
  return std::int64_t(cublaslt::kWorkspaceBytes) + scale_layout::swizzled_bytes(problem.m, problem.k);
}

std::unique_ptr<PreparedWeight> CublasLtBackend::prepare(const Nvfp4View& weight, const DeviceInfo& device) {
  validate_weight(weight);
  const CheckResult usable = check_device(device);
  if (!usable) throw Error(ErrorCode::unsupported, "cublaslt cannot run on " + device.to_string() + ": " + usable.reason);
  if (weight.cols % 32 != 0) {
    throw Error(ErrorCode::unsupported, "cublaslt needs K to be a multiple of 32; this weight has K = " + std::to_string(weight.cols));
  }
  const cuda::DeviceGuard guard(device.index);
  auto prepared = std::make_unique<CublasLtWeight>();
  prepared->rows = weight.rows;
  prepared->cols = weight.cols;
  prepared->backend = name();
  prepared->device = device.index;
  const std::size_t code_bytes = std::size_t(weight.code_bytes());
  const std::size_t scale_bytes = std::size_t(scale_layout::swizzled_bytes(weight.rows, weight.cols));
  prepared->codes = cuda::DeviceBuffer(code_bytes, "cublaslt weight codes");
  prepared->scales = cuda::DeviceBuffer(scale_bytes, "cublaslt weight scales");
  const cudaMemcpyKind kind = weight.memory == Memory::host ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToDevice;
  cuda::check_cuda(cudaMemcpy(prepared->codes.data(), weight.codes, code_bytes, kind), "cublaslt: copying the weight codes");
  if (weight.scale_layout == ScaleLayout::swizzled_128x4) {
    cuda::check_cuda(cudaMemcpy(prepared->scales.data(), weight.scales, scale_bytes, kind), "cublaslt: copying the weight scales");
  } else if (weight.memory == Memory::host) {
    const std::vector<std::uint8_t> swizzled = scale_layout::to_swizzled(weight.scales, weight.rows, weight.cols);
    cuda::check_cuda(cudaMemcpy(prepared->scales.data(), swizzled.data(), scale_bytes, cudaMemcpyHostToDevice),
                     "cublaslt: uploading the swizzled weight scales");
  } else {
    cuda::check_cuda(cublaslt::swizzle_scales_on_device(weight.scales, prepared->scales.as<std::uint8_t>(), weight.rows,
                                                        weight.cols, nullptr),
                     "cublaslt: swizzling the weight scales");
    cuda::check_cuda(cudaDeviceSynchronize(), "cublaslt: swizzling the weight scales");
  }
  prepared->resident_bytes = std::int64_t(code_bytes + scale_bytes);
  return prepared;
}

void CublasLtBackend::run(const ActivationView& a, const PreparedWeight& weight, float alpha, const MutableDenseView& out,
                          const RunContext& context) {
  const GemmProblem problem = validate_gemm(a, weight, out, Memory::cuda);
  const auto& prepared = prepared_as<CublasLtWeight>(weight, name());
  if (a.type != ActivationType::nvfp4) {
    throw Error(ErrorCode::unsupported, std::string("cublaslt needs nvfp4 activations (W4A4); got ") + to_string(a.type) +
                                            ": quantize the activations first or use another backend");
  }
  if (problem.m == 0 || problem.n == 0) return;
  const int device = prepared.device;
  const cuda::DeviceGuard guard(device);
  cuda::check_device_pointer(a.nvfp4.codes, device, "cublaslt: the activation codes pointer");
  cuda::check_device_pointer(out.data, device, "cublaslt: the output pointer");
  const auto stream = static_cast<cudaStream_t>(context.cuda_stream);

  // Activation scales must be swizzled and padded to 128 rows: convert linear ones into
  // stream-ordered scratch (freed on the same stream, so safe under graph capture).
  const void* activation_scales = a.nvfp4.scales;
  std::unique_ptr<cuda::StreamBuffer> swizzled;
  if (a.nvfp4.scale_layout == ScaleLayout::linear) {
    swizzled = std::make_unique<cuda::StreamBuffer>(std::size_t(scale_layout::swizzled_bytes(problem.m, problem.k)), stream,
                                                    "cublaslt activation scales");
    cuda::check_cuda(cublaslt::swizzle_scales_on_device(a.nvfp4.scales, swizzled->as<std::uint8_t>(), problem.m, problem.k,
                                                        stream),
                     "cublaslt: swizzling the activation scales");
    activation_scales = swizzled->data();
  }

  // The run's own query sees the real scale pointers (their alignment may matter to cuBLASLt).
  cublaslt::Nvfp4MatmulDescriptors descriptors(problem.m, problem.n, problem.k, problem.output, out.stride());
  descriptors.set_scale_pointers(prepared.scales.data(), activation_scales);
  cublasLtHandle_t handle;
  Algorithm algorithm;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    handle = handle_for(device);
    algorithm = find_algorithm(device, problem.m, problem.n, problem.k, problem.output, out.stride(), &descriptors);
  }
  if (algorithm.status != CUBLAS_STATUS_SUCCESS) {
    throw Error(algorithm.status == CUBLAS_STATUS_NOT_SUPPORTED ? ErrorCode::unsupported : ErrorCode::backend_failure,
                "cublaslt: no cuBLASLt algorithm for " + problem.to_string() + ": the heuristic query answered " +
                    cublaslt::status_text(algorithm.status));
  }
  cuda::StreamBuffer workspace(std::size_t(cublaslt::kWorkspaceBytes), stream, "cublaslt workspace");
  const float beta = 0.0f;
  cuda::check_cublas(cublasLtMatmul(handle, descriptors.operation, &alpha, prepared.codes.data(), descriptors.weight,
                                    a.nvfp4.codes, descriptors.activation, &beta, out.data, descriptors.output, out.data,
                                    descriptors.output, &algorithm.algorithm, workspace.data(),
                                    std::size_t(cublaslt::kWorkspaceBytes), stream),
                     "cublaslt: cublasLtMatmul on " + problem.to_string());
  cuda::check_launch("cublaslt: cublasLtMatmul on " + problem.to_string());
}

}  // namespace fp4gemm
