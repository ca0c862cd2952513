#pragma once
// `ref`: plain loops with double accumulation. The oracle every other backend is tested against.
#include <vector>

#include "fp4gemm/backend.hpp"

namespace fp4gemm {

class RefBackend final : public Backend {
 public:
  std::string name() const override { return "ref"; }
  std::string summary() const override { return "CPU reference: plain loops, FP64 accumulation (the oracle)"; }
  Memory memory() const override { return Memory::host; }
  CheckResult check_device(const DeviceInfo& device) const override;
  CheckResult check_problem(const GemmProblem& problem, const DeviceInfo& device) const override;
  WeightResidency residency(std::int64_t rows, std::int64_t cols) const override;
  std::int64_t workspace_bytes(const GemmProblem& problem, const DeviceInfo& device) const override;
  std::unique_ptr<PreparedWeight> prepare(const Nvfp4View& weight, const DeviceInfo& device) override;
  void run(const ActivationView& a, const PreparedWeight& weight, float alpha, const MutableDenseView& out,
           const RunContext& context) override;
};

// The exact product in FP64 before output rounding, plus sum_k |alpha * a * w| per element: the
// error scale of any summation order, which tests use as the denominator of relative error.
struct ReferenceResult {
  std::vector<double> values;        // [m, n]
  std::vector<double> absolute_sum;  // [m, n]
};
ReferenceResult reference_gemm(const ActivationView& a, const Nvfp4View& weight, float alpha);

}  // namespace fp4gemm
