#pragma once
// `cuda_nvfp4`: our small-M NVFP4 kernels (M <= 64; W4A16 with BF16 and W4A4 with NVFP4
// activations) for CUDA GPUs of SM 8.0 and newer, built for sm_90a (and sm_80). Weights are
// reordered once at prepare() into the MMA fragment layout (decode_layout.hpp) and streamed from
// HBM once per call: by the mma.sync kernel (sm90_decode_gemm.cu), or on SM 9.0 from M = 17 (tall
// weights), 25 (where its grid fills the SMs) or 33 (large weights) by the wgmma kernel
// (sm90_wgmma_gemm.cu; the switch is choose_decode_kernel, decode_tuning.hpp).
// kernel_plan() says which, in which shape and why (kernel_plan.hpp).
#include "fp4gemm/backend.hpp"

namespace fp4gemm {

class CudaNvfp4Backend final : public Backend {
 public:
  std::string name() const override { return "cuda_nvfp4"; }
  std::string summary() const override;
  Memory memory() const override { return Memory::cuda; }
  CheckResult check_device(const DeviceInfo& device) const override;
  CheckResult check_problem(const GemmProblem& problem, const DeviceInfo& device) const override;
  std::string kernel_plan(const GemmProblem& problem, const DeviceInfo& device) const override;
  // "mma.sync", "wgmma" or "prefill" (choose_decode_kernel); "" when
  // FP4GEMM_DECODE_KERNEL is malformed, which kernel_plan() and run() report instead.
  std::string kernel_name(const GemmProblem& problem, const DeviceInfo& device) const override;
  std::unique_ptr<PreparedWeight> prepare(const Nvfp4View& weight, const DeviceInfo& device) override;
  void run(const ActivationView& a, const PreparedWeight& weight, float alpha, const MutableDenseView& out,
           const RunContext& context) override;
};

}  // namespace fp4gemm
