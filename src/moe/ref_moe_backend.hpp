#pragma once
// `ref` MoE backend: the oracle (moe_reference.hpp) behind the MoeBackend interface. Plain loops,
// FP64 accumulation, one expert decoded at a time; slow by design.
#include "fp4gemm/moe/moe_backend.hpp"

namespace fp4gemm::moe {

class RefMoeBackend final : public MoeBackend {
 public:
  std::string name() const override { return "ref"; }
  std::string summary() const override { return "CPU reference MoE: plain loops, FP64 accumulation (the oracle)"; }
  Memory memory() const override { return Memory::host; }
  CheckResult check_device(const DeviceInfo& device) const override;
  CheckResult check_problem(const MoeProblem& problem, const DeviceInfo& device) const override;
  std::unique_ptr<PreparedMoe> prepare(const MoeWeights& weights, const DeviceInfo& device) override;
  void run(const MoeCall& call, const PreparedMoe& layer, const MutableDenseView& out, const RunContext& context) override;
};

}  // namespace fp4gemm::moe
