#pragma once
// `cpu` MoE backend. Tokens are grouped by expert (permute_by_expert), so each active expert's
// weights stream once per call: its tokens form one [m_e, H] GEMM on the dense `cpu` backend's
// kernels, gate and up as one [2I, H] weight. Experts whose m_e fits the fused kernels run as one
// batch: all their gate_up tiles in one OpenMP region, all their down tiles in another, so a
// decode step waits at two barriers, not two per active expert; larger experts run alone through
// CpuBackend::run (SGEMM panels). Experts run one after another in ascending order and add
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
