#pragma once
// `cuda_nvfp4`: our CUDA kernels that read the NVFP4 weight directly (W4A16 with BF16 and W4A4
// with NVFP4 activations), for GPUs of SM 8.0 and newer, built for sm_90a and sm_80. Weights are
// reordered once at prepare() into the MMA fragment layout (weight_layout.hpp) and streamed from
// HBM once per call by one of three kernels: mma.sync for small M (mma_small_m/, any SM 8.0+), and
// on SM 9.0 wgmma for small M (wgmma_small_m/) and the prefill kernel above M = 64
// (wgmma_prefill/). select_plan (plan.hpp) chooses the kernel and its launch once per call; run(),
// kernel_name() and kernel_plan() all use that plan.
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
  WeightResidency residency(std::int64_t rows, std::int64_t cols) const override;
  // Packed activations and the K-split / stream-K partials of the planned kernel, plus a BF16 copy of
  // NVFP4 activations (W4A4); an unaligned BF16 view adds an aligned copy (M x K x 2 bytes) on top.
  std::int64_t workspace_bytes(const GemmProblem& problem, const DeviceInfo& device) const override;
  std::unique_ptr<PreparedWeight> prepare(const Nvfp4View& weight, const DeviceInfo& device) override;
  void run(const ActivationView& a, const PreparedWeight& weight, float alpha, const MutableDenseView& out,
           const RunContext& context) override;
};

}  // namespace fp4gemm
