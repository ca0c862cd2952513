#pragma once
// `cuda_dequant_cublas`: the portable GPU path. prepare() copies the NVFP4 weight to the GPU as it is
// (0.5625 B/element); run() dequantizes it, a slice of rows at a time, into one bounded BF16
// workspace (exact: every E2M1 x E4M3 product is a BF16 value) and runs one cuBLAS GEMM per slice
// with BF16 operands and FP32 accumulation (CUBLAS_COMPUTE_32F), alpha in its epilogue. Any CUDA
// GPU of SM >= 8.0 (BF16 tensor cores). The dequantization costs about (0.5625 + 2) B/element of
// extra traffic per call, so this is the fallback and the large-M path, not the decode path.
//
// `cuda_bf16_copy` is the same backend keeping a persistent BF16 copy of each weight made at
// prepare (2 B/element, 3.6x the NVFP4 bytes) instead: one cuBLAS call per run, no dequantization.
// `auto` never picks it (WeightResidency::dense_copy); a caller who trades memory for prefill speed
// names it.
//
// The workspace: a slice of ceil-to-128 rows x K x 2 bytes, at most kDequantWorkspaceBytes (one
// slice of 128 rows when K alone exceeds that), from a per-device pool that keeps it between calls
// (cuda::WorkspacePool); a weight smaller than the bound is dequantized whole.
//
// Activations:
//   bf16  -> straight into cuBLAS (any row stride >= K).
//   nvfp4 -> dequantized on the GPU to a BF16 scratch [M, K] (exact), then the same GEMM.
//   f32   -> NOT rounded to BF16 (that would lose 16 bits): split exactly into three BF16 terms
//            hi + mid + lo, stacked as a [3M, K] operand, one GEMM to FP32 [3M, N], and an epilogue
//            that sums the three partials. Exact products, FP32 accumulation, the weight read once;
//            costs 3x the activation traffic and compute (negligible at decode sizes).
// Outputs: bf16 and f32 straight from cuBLAS; f16 through an FP32 scratch and the epilogue, since
// cuBLAS has no BF16 x BF16 -> FP16 GEMM. alpha is applied before the single rounding either way.
//
// NOTE: scales of device-resident NVFP4 *activations* are not checked for NaN (that would need a
// device-to-host copy and a sync per call); a NaN scale yields NaN outputs, as in the reference.
// Device-resident *weight* scales are copied to the host and checked once, in prepare().
#include <cublas_v2.h>

#include <map>
#include <memory>
#include <mutex>

#include "backends/cuda_common/device_buffer.hpp"
#include "backends/cuda_dequant_cublas/dequant_slices.hpp"
#include "fp4gemm/backend.hpp"

namespace fp4gemm {

// Where the dequantized weight lives: made per call in the bounded workspace, or kept from prepare.
enum class Bf16Weight { per_call, persistent_copy };

class CudaDequantCublasBackend final : public Backend {
 public:
  explicit CudaDequantCublasBackend(Bf16Weight weight = Bf16Weight::per_call,
                                    std::int64_t workspace_bytes = kDequantWorkspaceBytes)
      : weight_(weight), workspace_bound_(workspace_bytes) {}
  ~CudaDequantCublasBackend() override;

  std::string name() const override {
    return weight_ == Bf16Weight::per_call ? "cuda_dequant_cublas" : "cuda_bf16_copy";
  }
  std::string summary() const override;
  Memory memory() const override { return Memory::cuda; }
  WeightResidency residency(std::int64_t rows, std::int64_t cols) const override;
  std::int64_t workspace_bytes(const GemmProblem& problem, const DeviceInfo& device) const override;
  CheckResult check_device(const DeviceInfo& device) const override;
  CheckResult check_problem(const GemmProblem& problem, const DeviceInfo& device) const override;
  std::string kernel_plan(const GemmProblem& problem, const DeviceInfo& device) const override;
  std::unique_ptr<PreparedWeight> prepare(const Nvfp4View& weight, const DeviceInfo& device) override;
  void run(const ActivationView& a, const PreparedWeight& weight, float alpha, const MutableDenseView& out,
           const RunContext& context) override;

 private:
  // One cuBLAS handle per device, made by the first prepare() for that device (so constructing,
  // listing or checking the backend never touches the GPU, and run() stays capturable into a CUDA
  // graph: run() with a weight prepared by another instance makes the handle then, outside capture only). Guarded by mutex_, which also serialises the
  // cublasSetStream + GEMM pair so concurrent run() calls on different streams stay correct.
  cublasHandle_t handle_for(int device);
  // The per-call workspace pool of `device`, made by the first prepare() for it, like the handle.
  cuda::WorkspacePool& pool_for(int device);
  Bf16Weight weight_;
  std::int64_t workspace_bound_;
  std::mutex mutex_;
  std::map<int, cublasHandle_t> handles_;
  std::map<int, std::unique_ptr<cuda::WorkspacePool>> pools_;
};

}  // namespace fp4gemm
