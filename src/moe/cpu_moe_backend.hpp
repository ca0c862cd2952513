#pragma once
// `cpu` MoE backend. Tokens are grouped by expert (permute_by_expert), so each active expert's
// weights stream once per call: its tokens form one [m_e, H] GEMM through the dense `cpu`
// backend's kernels (fused decode for small m_e, SGEMM panels above; all cores inside each GEMM),
// gate and up as one [2I, H] weight. Experts run one after another in ascending order and add
// into an FP32 accumulator per token, so the sum's order, and the result, do not depend on threads.
#include "backends/cpu/cpu_backend.hpp"
#include "fp4gemm/moe/moe_backend.hpp"

namespace fp4gemm::moe {

class CpuMoeBackend final : public MoeBackend {
 public:
  std::string name() const override { return "cpu"; }
  std::string summary() const override;
  Memory memory() const override { return Memory::host; }
  CheckResult check_device(const DeviceInfo& device) const override;
  CheckResult check_problem(const MoeProblem& problem, const DeviceInfo& device) const override;
  std::string plan(const MoeProblem& problem, const DeviceInfo& device) const override;
  std::unique_ptr<PreparedMoe> prepare(const MoeWeights& weights, const DeviceInfo& device) override;
  void run(const MoeCall& call, const PreparedMoe& layer, const MutableDenseView& out, const RunContext& context) override;

 private:
  CpuBackend gemm_;
};

}  // namespace fp4gemm::moe
