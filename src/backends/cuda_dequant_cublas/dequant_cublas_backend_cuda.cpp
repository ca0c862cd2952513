#include "backends/cuda_dequant_cublas/dequant_cublas_backend.hpp"

#include <algorithm>
#include <climits>
#include <vector>

#include "backends/cuda_common/cuda_check.hpp"
#include "backends/cuda_common/device_buffer.hpp"
#include "backends/cuda_common/nvfp4_dequantize.hpp"
#include "backends/cuda_dequant_cublas/dequant_kernels.hpp"
#include "fp4gemm/format/nvfp4_matrix.hpp"
#include "fp4gemm/format/scale_layout.hpp"

namespace fp4gemm {
namespace {

constexpr const char* kName = "cuda_dequant_cublas";  // error messages of both variants
constexpr int kMinimumSm = 80;  // BF16 tensor cores and cuBLAS BF16 GEMMs start with Ampere
constexpr int kSplitTerms = 3;  // FP32 activations = 3 BF16 terms (see the header)

// The weight on `device`: its NVFP4 codes and linear scales (per-call dequantization), or its BF16
// copy [rows, cols] row-major (cuda_bf16_copy).
struct DequantWeight final : PreparedWeight {
  cuda::DeviceBuffer codes, scales;
  cuda::DeviceBuffer values;
  const std::uint16_t* bf16() const { return values.as<const std::uint16_t>(); }
  // Rows [first, first + rows) of the NVFP4 weight.
  cuda::DeviceNvfp4 slice(std::int64_t first, std::int64_t slice_rows) const {
    return {codes.as<const std::uint8_t>() + first * (cols / 2),
            scales.as<const std::uint8_t>() + first * scale_layout::scale_cols(cols), false, slice_rows, cols};
  }
};

std::string where(const char* what) { return std::string(kName) + ": " + what; }

cudaDataType_t cublas_type(DType dtype) {
  switch (dtype) {
    case DType::f32: return CUDA_R_32F;
    case DType::bf16: return CUDA_R_16BF;
    case DType::f16: return CUDA_R_16F;
  }
  return CUDA_R_32F;
}

// Row-major out[M, N] = a[M, K] * w[N, K]^T is, in cuBLAS's column-major terms,
// out^T[N, M] = w^T(op T of the [K, N] column-major w) * a^T([K, M] column-major a): the "TN" GEMM.
void gemm_tn(cublasHandle_t handle, const std::uint16_t* weight, std::int64_t n, std::int64_t k, const void* activation,
             std::int64_t activation_rows, std::int64_t activation_stride, float alpha, void* out, DType out_dtype,
             std::int64_t out_stride) {
  const float beta = 0.0f;
  cuda::check_cublas(cublasGemmEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, int(n), int(activation_rows), int(k), &alpha, weight,
                                  CUDA_R_16BF, int(k), activation, CUDA_R_16BF, int(activation_stride), &beta, out,
                                  cublas_type(out_dtype), int(out_stride), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                     where("the cuBLAS BF16 GEMM (cublasGemmEx)"));
}

void check_view_device(int view_device, int weight_device, const char* what) {
  if (view_device != weight_device) {
    throw_invalid(std::string(kName) + ": the " + what + " view names CUDA device " + std::to_string(view_device) +
                  " but the weight was prepared on device " + std::to_string(weight_device) +
                  "; run on the device the weight lives on");
  }
}

// Every pointer the GPU will read or write, checked before anything is launched.
void check_run_pointers(const ActivationView& a, const MutableDenseView& out, int device) {
  if (a.type == ActivationType::nvfp4) {
    check_view_device(a.nvfp4.device, device, "activation");
    cuda::check_device_pointer(a.nvfp4.codes, device, where("the activation codes pointer"));
    cuda::check_device_pointer(a.nvfp4.scales, device, where("the activation scales pointer"));
  } else {
    check_view_device(a.dense.device, device, "activation");
    cuda::check_device_pointer(a.dense.data, device, where("the activation pointer"));
  }
  check_view_device(out.device, device, "output");
  cuda::check_device_pointer(out.data, device, where("the output pointer"));
}

}  // namespace

CudaDequantCublasBackend::~CudaDequantCublasBackend() {
  for (auto& [device, handle] : handles_) {
    int previous = 0;
    if (cudaGetDevice(&previous) == cudaSuccess && cudaSetDevice(device) == cudaSuccess) {
      cublasDestroy(handle);
      cudaSetDevice(previous);
    }
  }
}

std::string CudaDequantCublasBackend::summary() const {
  if (weight_ == Bf16Weight::persistent_copy) {
    return "any CUDA GPU of SM >= 8.0: keeps a BF16 copy of each weight made at prepare (2 B/element, 3.6x NVFP4; never "
           "chosen by auto), one cuBLAS BF16 GEMM per call; FP32 activations as an exact 3 x BF16 split";
  }
  return "any CUDA GPU of SM >= 8.0: keeps the NVFP4 weight; per call dequantizes it to BF16 on the GPU (exact) into a "
         "workspace of at most " + std::to_string(workspace_bound_ >> 20) +
         " MiB, slice by slice, each slice one cuBLAS BF16 GEMM with FP32 accumulation; FP32 activations as an exact 3 x "
         "BF16 split";
}

WeightResidency CudaDequantCublasBackend::residency(std::int64_t rows, std::int64_t cols) const {
  if (weight_ == Bf16Weight::persistent_copy) {
    return {rows * cols * 2, Memory::cuda, true, "a BF16 copy of the weight made at prepare (2 B/element)"};
  }
  return {rows * (cols / 2) + rows * scale_layout::scale_cols(cols), Memory::cuda, false,
          "the checkpoint NVFP4 codes and E4M3 scales, copied as they are (0.5625 B/element)"};
}

std::int64_t CudaDequantCublasBackend::workspace_bytes(const GemmProblem& problem, const DeviceInfo&) const {
  const std::int64_t m = problem.m, n = problem.n, k = problem.k;
  std::int64_t bytes = weight_ == Bf16Weight::per_call ? dequant_slice_rows(n, k, workspace_bound_) * k * 2 : 0;
  const std::int64_t gemm_rows = problem.activation == ActivationType::f32 ? kSplitTerms * m : m;
  if (problem.activation != ActivationType::bf16) bytes += gemm_rows * k * 2;  // the BF16 operand made per call
  if (problem.activation == ActivationType::f32 || problem.output == DType::f16) bytes += gemm_rows * n * 4;  // partials
  return bytes;
}

CheckResult CudaDequantCublasBackend::check_device(const DeviceInfo& device) const {
  if (!device.is_cuda()) return CheckResult::fail("needs a CUDA GPU; this device is the CPU");
  if (device.sm() < kMinimumSm) {
    return CheckResult::fail("needs a CUDA GPU of SM 8.0 or newer for BF16 GEMMs; this is SM " +
                             std::to_string(device.sm_major) + "." + std::to_string(device.sm_minor));
  }
  return CheckResult::pass();
}

CheckResult CudaDequantCublasBackend::check_problem(const GemmProblem& problem, const DeviceInfo& device) const {
  if (problem.k % 16 != 0) return CheckResult::fail("K must be a multiple of 16, the NVFP4 block size");
  // cuBLAS takes int dimensions; FP32 activations become 3M rows.
  const std::int64_t gemm_rows = problem.activation == ActivationType::f32 ? kSplitTerms * problem.m : problem.m;
  if (gemm_rows > INT_MAX || problem.n > INT_MAX || problem.k > INT_MAX) {
    return CheckResult::fail("cuBLAS takes 32-bit dimensions; M (x3 for FP32 activations), N and K must be below 2^31");
  }
  const double needed = double(residency(problem.n, problem.k).bytes) + double(workspace_bytes(problem, device));
  if (device.free_memory_bytes > 0 && needed > double(device.free_memory_bytes)) {
    return CheckResult::fail(std::string(weight_ == Bf16Weight::persistent_copy ? "the BF16 copy of the weight"
                                                                                : "the NVFP4 weight") +
                             " and the per-call workspace need " + std::to_string(std::int64_t(needed) >> 20) +
                             " MiB but the GPU has " + std::to_string(device.free_memory_bytes >> 20) + " MiB free");
  }
  return CheckResult::pass();
}

std::string CudaDequantCublasBackend::kernel_plan(const GemmProblem& problem, const DeviceInfo& /*device*/) const {
  std::string plan;
  if (problem.activation == ActivationType::nvfp4) plan = "NVFP4 activations dequantized to BF16 (exact), then ";
  if (problem.activation == ActivationType::f32) {
    plan = "FP32 activations split exactly into " + std::to_string(kSplitTerms) + " BF16 terms (" +
           std::to_string(kSplitTerms * problem.m) + " GEMM rows), then ";
  }
  if (weight_ == Bf16Weight::persistent_copy) {
    plan += "cublasGemmEx BF16 x BF16 with FP32 accumulation on the BF16 copy of the weight made at prepare";
  } else {
    const std::int64_t slice = dequant_slice_rows(problem.n, problem.k, workspace_bound_);
    const std::int64_t slices = slice > 0 ? (problem.n + slice - 1) / slice : 0;
    plan += "the weight dequantized to BF16 in " + std::to_string(slices) + (slices == 1 ? " slice" : " slices") + " of " +
            std::to_string(slice) + " rows (" + std::to_string((slice * problem.k * 2) >> 10) +
            " KiB of workspace), each followed by cublasGemmEx BF16 x BF16 with FP32 accumulation";
  }
  if (problem.activation == ActivationType::f32) {
    plan += ", the terms summed in FP32 by an epilogue kernel";
  } else if (problem.output == DType::f16) {
    plan += " into FP32, converted to FP16 by an epilogue kernel";
  }
  return plan;
}

cublasHandle_t CudaDequantCublasBackend::handle_for(int device) {
  const auto found = handles_.find(device);
  if (found != handles_.end()) return found->second;
  cublasHandle_t handle = nullptr;
  cuda::check_cublas(cublasCreate(&handle), where("creating a cuBLAS handle"));
  handles_.emplace(device, handle);
  return handle;
}

cuda::WorkspacePool& CudaDequantCublasBackend::pool_for(int device) {
  auto& pool = pools_[device];
  if (!pool) pool = std::make_unique<cuda::WorkspacePool>(device);
  return *pool;
}

std::unique_ptr<PreparedWeight> CudaDequantCublasBackend::prepare(const Nvfp4View& weight, const DeviceInfo& device) {
  validate_weight(weight);
  const CheckResult usable = check_device(device);
  if (!usable) throw Error(ErrorCode::unsupported, std::string(kName) + " cannot run here: " + usable.reason);
  if (weight.memory == Memory::cuda && weight.device != device.index) {
    throw_invalid(std::string(kName) + ": the weight lives on CUDA device " + std::to_string(weight.device) +
                  " but preparation was asked for device " + std::to_string(device.index));
  }
  cuda::DeviceGuard guard(device.index);
  {
    // NOTE: the cuBLAS handle is made here, not on the first run(): cublasCreate allocates device
    // memory, which is illegal while a stream is being captured into a CUDA graph, and run() must
    // be capturable. (Seen on the H200: a first run() inside capture failed with NOT_INITIALIZED.)
    // The workspace pool likewise: made here, outside any capture.
    std::lock_guard lock(mutex_);
    handle_for(device.index);
    if (weight_ == Bf16Weight::per_call) pool_for(device.index);
  }
  auto prepared = std::make_unique<DequantWeight>();
  prepared->rows = weight.rows;
  prepared->cols = weight.cols;
  prepared->backend = name();
  prepared->device = device.index;
  if (weight.rows * weight.cols == 0) return prepared;

  // Codes and scales on the device: uploaded from the host, or the caller's device buffers as they are.
  cuda::DeviceBuffer uploaded_codes, uploaded_scales;
  cuda::DeviceNvfp4 source{weight.codes, weight.scales, weight.scale_layout == ScaleLayout::swizzled_128x4,
                                     weight.rows, weight.cols};
  const std::uint8_t* host_scales = weight.scales;  // the scales on the host, in the weight's layout
  std::vector<std::uint8_t> copied_scales;
  if (weight.memory == Memory::host) {
    uploaded_codes = cuda::upload(weight.codes, std::size_t(weight.code_bytes()), where("the weight codes"));
    uploaded_scales = cuda::upload(weight.scales, std::size_t(weight.scale_bytes()), where("the weight scales"));
    source.codes = uploaded_codes.as<const std::uint8_t>();
    source.scales = uploaded_scales.as<const std::uint8_t>();
  } else {
    cuda::check_device_pointer(weight.codes, device.index, where("the weight codes pointer"));
    cuda::check_device_pointer(weight.scales, device.index, where("the weight scales pointer"));
    // validate_weight() cannot read device scales; check a host copy for NaN once, here.
    copied_scales.resize(static_cast<std::size_t>(weight.scale_bytes()));
    cuda::check_cuda(cudaMemcpy(copied_scales.data(), weight.scales, copied_scales.size(), cudaMemcpyDeviceToHost),
                     where("copying the weight scales to the host for validation"));
    Nvfp4View host_copy = weight;
    host_copy.scales = copied_scales.data();
    host_copy.memory = Memory::host;  // codes are not read by the check
    validate_nvfp4(host_copy, "weight");
    host_scales = copied_scales.data();
  }

  if (weight_ == Bf16Weight::per_call) {
    // The codes as they are (the upload, or a device copy of the caller's); the scales linear, so a
    // slice of rows is a pointer offset and the bytes kept are exactly residency()'s.
    if (uploaded_codes.data() != nullptr) {
      prepared->codes = std::move(uploaded_codes);
    } else {
      prepared->codes = cuda::DeviceBuffer(std::size_t(weight.code_bytes()), where("the weight codes"));
      cuda::check_cuda(cudaMemcpy(prepared->codes.data(), weight.codes, std::size_t(weight.code_bytes()),
                                  cudaMemcpyDeviceToDevice),
                       where("copying the weight codes"));
    }
    if (source.swizzled_scales) {
      const std::vector<std::uint8_t> linear = scale_layout::to_linear(host_scales, weight.rows, weight.cols);
      prepared->scales = cuda::upload(linear.data(), linear.size(), where("the linear weight scales"));
    } else if (uploaded_scales.data() != nullptr) {
      prepared->scales = std::move(uploaded_scales);
    } else {
      prepared->scales = cuda::upload(host_scales, std::size_t(weight.scale_bytes()), where("the weight scales"));
    }
    prepared->resident_bytes = std::int64_t(prepared->codes.bytes() + prepared->scales.bytes());
    return prepared;
  }
  prepared->values = cuda::DeviceBuffer(std::size_t(weight.rows * weight.cols) * 2, where("the BF16 weight"));
  cuda::launch_dequantize_to_bf16(source, prepared->values.as<std::uint16_t>(), nullptr);
  // Synchronous: the uploads are freed on return, and a failure belongs to prepare(), not a later run().
  cuda::check_cuda(cudaStreamSynchronize(nullptr), where("dequantizing the weight to BF16"));
  prepared->resident_bytes = std::int64_t(prepared->values.bytes());
  return prepared;
}

void CudaDequantCublasBackend::run(const ActivationView& a, const PreparedWeight& weight, float alpha,
                                   const MutableDenseView& out, const RunContext& context) {
  const GemmProblem problem = validate_gemm(a, weight, out, Memory::cuda);
  const auto& prepared = prepared_as<DequantWeight>(weight, name());
  // Both variants share the type; a BF16 copy has no NVFP4 buffers to slice, and the reverse.
  if (weight.backend != name()) {
    throw_invalid("the weight was prepared by backend '" + weight.backend + "', not '" + name() +
                  "': call prepare() on the backend that runs it");
  }
  if (problem.m == 0 || problem.n == 0) return;
  const CheckResult fits = check_problem(problem, DeviceInfo{});
  if (!fits) throw Error(ErrorCode::unsupported, std::string(kName) + " cannot run " + problem.to_string() + ": " + fits.reason);
  check_run_pointers(a, out, prepared.device);
  cuda::DeviceGuard guard(prepared.device);
  const auto stream = static_cast<cudaStream_t>(context.cuda_stream);
  const std::int64_t m = problem.m, n = problem.n, k = problem.k;
  const std::size_t out_element = dtype_size(out.dtype);

  if (k == 0) {  // an empty sum: every output is zero
    cuda::check_cuda(cudaMemset2DAsync(out.data, std::size_t(out.stride()) * out_element, 0, std::size_t(n) * out_element,
                                       std::size_t(m), stream),
                     where("zeroing the output of a K = 0 product"));
    return;
  }

  std::lock_guard lock(mutex_);
  cublasHandle_t handle = handle_for(prepared.device);
  cuda::check_cublas(cublasSetStream(handle, stream), where("binding the caller's CUDA stream to cuBLAS"));

  // The BF16 operand cuBLAS multiplies: the caller's BF16 rows, or scratch made from NVFP4 / FP32.
  const void* activation = a.dense.data;
  std::int64_t activation_rows = m, activation_stride = a.dense.stride();
  std::unique_ptr<cuda::StreamBuffer> converted;
  if (a.type == ActivationType::nvfp4) {
    converted = std::make_unique<cuda::StreamBuffer>(std::size_t(m * k) * 2, stream, where("the BF16 activations"));
    cuda::launch_dequantize_to_bf16({a.nvfp4.codes, a.nvfp4.scales,
                                               a.nvfp4.scale_layout == ScaleLayout::swizzled_128x4, m, k},
                                              converted->as<std::uint16_t>(), stream);
    activation = converted->data();
    activation_stride = k;
  } else if (a.type == ActivationType::f32) {
    converted = std::make_unique<cuda::StreamBuffer>(std::size_t(kSplitTerms * m * k) * 2, stream,
                                                     where("the 3 x BF16 split of the FP32 activations"));
    dequant_cublas::launch_split_f32_to_bf16x3(static_cast<const float*>(a.dense.data), a.dense.stride(), m, k,
                                               converted->as<std::uint16_t>(), stream);
    activation = converted->data();
    activation_rows = kSplitTerms * m;
    activation_stride = k;
  }

  const bool needs_epilogue = a.type == ActivationType::f32 || out.dtype == DType::f16;
  std::unique_ptr<cuda::StreamBuffer> partials;
  if (needs_epilogue) {
    partials = std::make_unique<cuda::StreamBuffer>(std::size_t(activation_rows * n) * sizeof(float), stream,
                                                    where("the FP32 partial products"));
  }
  // Rows [first, first + rows) of out (or of the partials) from the BF16 rows of W at `bf16_rows`.
  const auto gemm_rows = [&](const std::uint16_t* bf16_rows, std::int64_t first, std::int64_t rows) {
    if (needs_epilogue) {
      gemm_tn(handle, bf16_rows, rows, k, activation, activation_rows, activation_stride, 1.0f,
              partials->as<float>() + first, DType::f32, n);
    } else {
      gemm_tn(handle, bf16_rows, rows, k, activation, activation_rows, activation_stride, alpha,
              static_cast<std::uint8_t*>(out.data) + first * std::int64_t(out_element), out.dtype, out.stride());
    }
  };
  if (weight_ == Bf16Weight::persistent_copy) {
    gemm_rows(prepared.bf16(), 0, n);
  } else {
    const std::int64_t slice = dequant_slice_rows(n, k, workspace_bound_);
    const cuda::StreamBuffer workspace(std::size_t(slice * k) * 2, stream, pool_for(prepared.device).handle(),
                                       where("the dequantized weight slice"));
    for (std::int64_t first = 0; first < n; first += slice) {
      const std::int64_t rows = std::min(slice, n - first);
      cuda::launch_dequantize_to_bf16(prepared.slice(first, rows), workspace.as<std::uint16_t>(), stream);
      cuda::check_launch(where("dequantizing a slice of the weight"));
      gemm_rows(workspace.as<const std::uint16_t>(), first, rows);
    }
  }
  if (needs_epilogue) {
    dequant_cublas::launch_combine_partials(partials->as<float>(), int(activation_rows / m), m, n, alpha, out.data,
                                            out.dtype, out.stride(), stream);
  }
}

}  // namespace fp4gemm
