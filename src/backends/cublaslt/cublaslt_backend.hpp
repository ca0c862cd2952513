#pragma once
// `cublaslt`: native NVFP4 (W4A4) through cuBLASLt on Blackwell: CUDA_R_4F_E2M1 operands with
// CUBLASLT_MATMUL_MATRIX_SCALE_VEC16_UE4M3 block scales in the 128x4 swizzled layout, FP32
// accumulation, alpha in the epilogue. SM 10.0/10.3/12.0/12.1 only; elsewhere cuBLASLt answers
// CUBLAS_STATUS_NOT_SUPPORTED (seen on the H200 here).
//
// NOTE: written against the CUDA 13.0 headers and tested here only for its checks and for the
// NOT_SUPPORTED answer on sm_90; it has NOT been run on a Blackwell GPU. The canary (a random
// problem compared with `ref` before it first serves) is what stands between it and a user there.
//
// Mapping of out[M,N] = alpha * A[M,K] * W[N,K]^T onto column-major cuBLASLt: D[N,M] (ld = the
// output row stride) = op(W) * op(A) with W as cuBLASLt's A operand ([K,N], ld K, transposed) and
// the activation as its B operand ([K,M], ld K): the "TN" form FP4 matmuls require. Scales: W's
// swizzled over N rows, the activation's over M rows.
#include <cublasLt.h>

#include <map>
#include <mutex>
#include <tuple>

#include "backends/cuda_common/device_buffer.hpp"
#include "fp4gemm/backend.hpp"

namespace fp4gemm {
namespace cublaslt {
class Nvfp4MatmulDescriptors;
}

class CublasLtBackend final : public Backend {
 public:
  CublasLtBackend() = default;  // touches no GPU: the registry is built on GPU-less machines
  ~CublasLtBackend() override;

  std::string name() const override { return "cublaslt"; }
  std::string summary() const override;
  Memory memory() const override { return Memory::cuda; }
  // From the DeviceInfo alone for simulated devices; on a real device (DeviceInfo::probed) also
  // cuBLASLt's heuristic query, so the reason quotes the library's own answer.
  CheckResult check_device(const DeviceInfo& device) const override;
  CheckResult check_problem(const GemmProblem& problem, const DeviceInfo& device) const override;
  WeightResidency residency(std::int64_t rows, std::int64_t cols) const override;
  // cuBLASLt's workspace, plus the activation scales swizzled when they come linear.
  std::int64_t workspace_bytes(const GemmProblem& problem, const DeviceInfo& device) const override;
  std::unique_ptr<PreparedWeight> prepare(const Nvfp4View& weight, const DeviceInfo& device) override;
  void run(const ActivationView& a, const PreparedWeight& weight, float alpha, const MutableDenseView& out,
           const RunContext& context) override;

 private:
  struct Algorithm {
    cublasStatus_t status = CUBLAS_STATUS_NOT_SUPPORTED;
    cublasLtMatmulAlgo_t algorithm{};
  };
  cublasLtHandle_t handle_for(int device) const;  // callers hold mutex_
  // The heuristic's first algorithm for this shape, cached per shape (checks pass M rounded up to
  // a power of two, runs the exact M and their descriptors with scale pointers set). Callers hold mutex_.
  Algorithm find_algorithm(int device, std::int64_t m, std::int64_t n, std::int64_t k, DType output,
                           std::int64_t output_stride, const cublaslt::Nvfp4MatmulDescriptors* with_pointers) const;
  CheckResult probe(const DeviceInfo& device, const GemmProblem& problem) const;

  // NOTE: the handle and heuristic caches are filled by const checks; mutex_ guards them.
  mutable std::mutex mutex_;
  mutable std::map<int, cublasLtHandle_t> handles_;
  // Per device, a small scale buffer for heuristic probes: cuBLASLt rejects a block-scaled matmul
  // whose scale pointers are unset (CUBLAS_STATUS_INVALID_VALUE), which would hide its real answer.
  mutable std::map<int, cuda::DeviceBuffer> probe_scales_;
  mutable std::map<std::tuple<int, std::int64_t, std::int64_t, std::int64_t, DType, std::int64_t>, Algorithm> algorithms_;
};

}  // namespace fp4gemm
