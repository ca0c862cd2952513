#pragma once
// `cpu`: the fast host backend. Small M: a fused Highway kernel that decodes NVFP4 in registers
// (SIMD lookup of the 16 E2M1 values) and multiplies straight away. Large M: weight panels decoded
// to FP32 and multiplied by OpenBLAS SGEMM. All cores (OpenMP).
#include "fp4gemm/backend.hpp"

namespace fp4gemm {

class CpuBackend final : public Backend {
 public:
  std::string name() const override { return "cpu"; }
  std::string summary() const override;
  Memory memory() const override { return Memory::host; }
  CheckResult check_device(const DeviceInfo& device) const override;
  CheckResult check_problem(const GemmProblem& problem, const DeviceInfo& device) const override;
  WeightResidency residency(std::int64_t rows, std::int64_t cols) const override;
  std::int64_t workspace_bytes(const GemmProblem& problem, const DeviceInfo& device) const override;
  std::unique_ptr<PreparedWeight> prepare(const Nvfp4View& weight, const DeviceInfo& device) override;
  void run(const ActivationView& a, const PreparedWeight& weight, float alpha, const MutableDenseView& out,
           const RunContext& context) override;
};

}  // namespace fp4gemm
