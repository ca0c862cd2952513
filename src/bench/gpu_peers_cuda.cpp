#include "bench/gpu_peers.hpp"

#include <vector>

#include "backends/cuda_common/cuda_check.hpp"
#include "backends/cuda_common/device_buffer.hpp"
#include "bench/gpu_bench_settings.hpp"
#include "bench/gpu_fill.hpp"
#include "bench/gpu_support.hpp"
#include "fp4gemm/format/half.hpp"

namespace fp4gemm::bench {
namespace {

using cuda::check_cublas;
using cuda::check_cuda;

// `copies` device copies of the same bytes (the first uploaded, the rest copied on the device).
std::vector<cuda::DeviceBuffer> replicate(const void* host, std::size_t bytes, int copies, const char* what) {
  std::vector<cuda::DeviceBuffer> buffers;
  buffers.push_back(cuda::upload(host, bytes, what));
  for (int copy = 1; copy < copies; ++copy) {
    buffers.emplace_back(bytes, what);
    check_cuda(cudaMemcpy(buffers.back().data(), buffers.front().data(), bytes, cudaMemcpyDeviceToDevice),
               std::string("bench: copying ") + what);
  }
  return buffers;
}

void fill(Result& result, const CallTiming& timing, int copies, const std::string& how) {
  result.time_us = timing.timing.median_us;
  result.spread = timing.timing.spread;
  result.repeats = timing.timing.repeats;
  result.note = how + "; " + timing_note(timing, copies);
}

// RAII owners of the cuBLASLt descriptors.
struct LtMatmul {
  cublasLtMatmulDesc_t operation = nullptr;
  cublasLtMatrixLayout_t weight = nullptr, activation = nullptr, output = nullptr;
  cublasLtMatmulPreference_t preference = nullptr;
  ~LtMatmul() {
    if (preference != nullptr) cublasLtMatmulPreferenceDestroy(preference);
    if (output != nullptr) cublasLtMatrixLayoutDestroy(output);
    if (activation != nullptr) cublasLtMatrixLayoutDestroy(activation);
    if (weight != nullptr) cublasLtMatrixLayoutDestroy(weight);
    if (operation != nullptr) cublasLtMatmulDescDestroy(operation);
  }
};

}  // namespace

Result time_cublas_bf16(const GemmProblem& problem, const Nvfp4Matrix& weight, cudaStream_t stream) {
  Result result{"cublas_bf16", true, problem};
  const std::int64_t m = problem.m, n = problem.n, k = problem.k;
  // The weight as a deployment without FP4 kernels holds it: dequantized (block scales applied) in BF16.
  const std::vector<float> dense = weight.dequantize(/*apply_global_scale=*/false);
  std::vector<std::uint16_t> bf16(dense.size());
  for (std::size_t i = 0; i < dense.size(); ++i) bf16[i] = float_to_bf16(dense[i]);
  const std::size_t weight_bytes = bf16.size() * 2;
  const int copies = rotation_copies(double(weight_bytes), l2_bytes());
  const auto weights = replicate(bf16.data(), weight_bytes, copies, "the cuBLAS peer's BF16 weight");
  cuda::DeviceBuffer activation(std::size_t(m * k) * 2, "the cuBLAS peer's activations"),
      out(std::size_t(m * n) * 2, "the cuBLAS peer's output");
  fill_random_bf16(activation.as<std::uint16_t>(), m * k, 21, stream);
  CublasHandle cublas(stream);
  const float alpha = weight.global_scale, beta = 0.0f;
  const CallTiming timing = time_calls(stream, calls_per_graph(copies), [&](int call) {
    check_cublas(cublasGemmEx(cublas.get(), CUBLAS_OP_T, CUBLAS_OP_N, int(n), int(m), int(k), &alpha,
                              weights[std::size_t(call % copies)].data(), CUDA_R_16BF, int(k), activation.data(),
                              CUDA_R_16BF, int(k), &beta, out.data(), CUDA_R_16BF, int(n), CUBLAS_COMPUTE_32F,
                              CUBLAS_GEMM_DEFAULT),
                 "bench: the cuBLAS BF16 peer GEMM");
  });
  fill(result, timing, copies, "cublasGemmEx BF16 x BF16 -> BF16, FP32 accumulation, dequantized weight");
  result.resident_bytes = std::int64_t(weight_bytes);
  return result;
}

Result time_cublaslt_fp8(const GemmProblem& problem, cudaStream_t stream) {
  Result result{"cublaslt_fp8", true, problem};
  const std::int64_t m = problem.m, n = problem.n, k = problem.k;
  CublasLtHandle lt;
  LtMatmul matmul;
  const std::string what = "bench: setting up the cuBLASLt FP8 peer";
  check_cublas(cublasLtMatmulDescCreate(&matmul.operation, CUBLAS_COMPUTE_32F, CUDA_R_32F), what);
  // out^T[N, M] = W[N, K] (stored [K, N] column-major, transposed) x a^T ([K, M] column-major): "TN",
  // the only layout cuBLASLt's FP8 kernels take.
  const cublasOperation_t transpose = CUBLAS_OP_T, keep = CUBLAS_OP_N;
  check_cublas(cublasLtMatmulDescSetAttribute(matmul.operation, CUBLASLT_MATMUL_DESC_TRANSA, &transpose, sizeof transpose), what);
  check_cublas(cublasLtMatmulDescSetAttribute(matmul.operation, CUBLASLT_MATMUL_DESC_TRANSB, &keep, sizeof keep), what);
  // Per-tensor scales, device scalars as a deployment passes them (1.0 here: only time is measured).
  // NOTE: each scale has its own allocation. H200, cuBLASLt 13.1: with both in one 8-byte buffer
  // (the second 4 bytes in) all 8 heuristic candidates answered NOT_SUPPORTED; in separate
  // allocations (or 16 bytes apart) they ran. cuBLAS documents no alignment for scale pointers.
  const float unit_scale = 1.0f;
  const cuda::DeviceBuffer weight_scale_buffer = cuda::upload(&unit_scale, sizeof unit_scale, "the FP8 peer's weight scale");
  const cuda::DeviceBuffer activation_scale_buffer =
      cuda::upload(&unit_scale, sizeof unit_scale, "the FP8 peer's activation scale");
  const float* weight_scale = weight_scale_buffer.as<const float>();
  const float* activation_scale = activation_scale_buffer.as<const float>();
  check_cublas(cublasLtMatmulDescSetAttribute(matmul.operation, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &weight_scale,
                                              sizeof weight_scale), what);
  check_cublas(cublasLtMatmulDescSetAttribute(matmul.operation, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &activation_scale,
                                              sizeof activation_scale), what);
  check_cublas(cublasLtMatrixLayoutCreate(&matmul.weight, CUDA_R_8F_E4M3, std::uint64_t(k), std::uint64_t(n), k), what);
  check_cublas(cublasLtMatrixLayoutCreate(&matmul.activation, CUDA_R_8F_E4M3, std::uint64_t(k), std::uint64_t(m), k), what);
  check_cublas(cublasLtMatrixLayoutCreate(&matmul.output, CUDA_R_16BF, std::uint64_t(n), std::uint64_t(m), n), what);
  check_cublas(cublasLtMatmulPreferenceCreate(&matmul.preference), what);
  const std::uint64_t workspace_bytes = gpu_settings::kLtWorkspaceBytes;
  check_cublas(cublasLtMatmulPreferenceSetAttribute(matmul.preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                    &workspace_bytes, sizeof workspace_bytes), what);

  // Ask for several candidates: the heuristic's first choice is not guaranteed to run (cuBLASLt's
  // own samples say so), so each is tried once, directly, and the first that runs is timed.
  cublasLtMatmulHeuristicResult_t candidates[gpu_settings::kLtHeuristicCandidates] = {};
  int found = 0;
  const cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(lt.get(), matmul.operation, matmul.weight, matmul.activation,
                                                               matmul.output, matmul.output, matmul.preference,
                                                               gpu_settings::kLtHeuristicCandidates, candidates, &found);
  if (status != CUBLAS_STATUS_SUCCESS || found == 0) {
    result.ok = false;
    result.note = std::string("cuBLASLt offers no FP8 E4M3 algorithm for M = ") + std::to_string(m) + " (heuristic: " +
                  (status != CUBLAS_STATUS_SUCCESS ? cublasGetStatusName(status) : "0 results") +
                  "); not padded, by design";
    return result;
  }

  const std::int64_t weight_bytes = n * k;
  const int copies = rotation_copies(double(weight_bytes), l2_bytes());
  std::vector<cuda::DeviceBuffer> weights;
  for (int copy = 0; copy < copies; ++copy) {
    weights.emplace_back(std::size_t(weight_bytes), "the FP8 peer's weight");
    fill_random_e4m3(weights.back().as<std::uint8_t>(), weight_bytes, 100 + std::uint64_t(copy), stream);
  }
  // C and D are separate buffers, as in cuBLASLt's FP8 sample.
  cuda::DeviceBuffer activation(std::size_t(m * k), "the FP8 peer's activations"),
      addend(std::size_t(m * n) * 2, "the FP8 peer's C (unused, beta = 0)"), out(std::size_t(m * n) * 2, "the FP8 peer's output"),
      workspace(std::size_t(workspace_bytes), "the cuBLASLt workspace");
  fill_random_e4m3(activation.as<std::uint8_t>(), m * k, 22, stream);
  check_cuda(cudaMemsetAsync(addend.data(), 0, addend.bytes(), stream), "bench: clearing the FP8 peer's C");
  const float alpha = 1.0f, beta = 0.0f;
  const auto matmul_with = [&](const cublasLtMatmulAlgo_t& algorithm, int call) {
    return cublasLtMatmul(lt.get(), matmul.operation, &alpha, weights[std::size_t(call % copies)].data(), matmul.weight,
                          activation.data(), matmul.activation, &beta, addend.data(), matmul.output, out.data(), matmul.output,
                          &algorithm, workspace.data(), workspace_bytes, stream);
  };
  int chosen = -1;
  std::string refusals;
  for (int candidate = 0; candidate < found && chosen < 0; ++candidate) {
    const cublasStatus_t tried = matmul_with(candidates[candidate].algo, 0);
    if (tried == CUBLAS_STATUS_SUCCESS) {
      chosen = candidate;
    } else {
      refusals += std::string(refusals.empty() ? "" : ", ") + cublasGetStatusName(tried);
    }
  }
  if (chosen < 0) {
    result.ok = false;
    result.note = "cuBLASLt's heuristic offered " + std::to_string(found) + " FP8 algorithms for M = " + std::to_string(m) +
                  " but cublasLtMatmul refused each (" + refusals + "); not padded, by design";
    return result;
  }
  check_cuda(cudaStreamSynchronize(stream), "bench: the cuBLASLt FP8 peer's trial call");
  const CallTiming timing = time_calls(stream, calls_per_graph(copies), [&](int call) {
    check_cublas(matmul_with(candidates[chosen].algo, call), "bench: the cuBLASLt FP8 peer matmul");
  });
  fill(result, timing, copies, "cublasLtMatmul E4M3 x E4M3 -> BF16, per-tensor scales, FP32 accumulation (fast-accumulation mode off, "
                                "the default), heuristic candidate " + std::to_string(chosen + 1) + " of " + std::to_string(found));
  result.resident_bytes = weight_bytes;
  return result;
}

}  // namespace fp4gemm::bench
