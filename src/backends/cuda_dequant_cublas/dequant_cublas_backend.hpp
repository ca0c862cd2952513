#pragma once
// `cuda_dequant_cublas`: the portable GPU path. prepare() dequantizes the NVFP4 weight once, on the
// GPU, to a BF16 [N, K] buffer (exact: every E2M1 x E4M3 product is a BF16 value); run() is one
// cuBLAS GEMM with BF16 operands and FP32 accumulation (CUBLAS_COMPUTE_32F), alpha in its epilogue.
// Any CUDA GPU of SM >= 8.0 (BF16 tensor cores). It stores 2 bytes per weight instead of 0.5625,
// so it is the fallback and the correctness baseline on the GPU, not the fast decode path.
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
#include <mutex>

#include "fp4gemm/backend.hpp"

namespace fp4gemm {

class CudaDequantCublasBackend final : public Backend {
 public:
  CudaDequantCublasBackend() = default;
  ~CudaDequantCublasBackend() override;

  std::string name() const override { return "cuda_dequant_cublas"; }
  std::string summary() const override;
  Memory memory() const override { return Memory::cuda; }
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
  std::mutex mutex_;
  std::map<int, cublasHandle_t> handles_;
};

}  // namespace fp4gemm
