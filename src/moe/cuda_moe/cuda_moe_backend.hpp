#pragma once
// `cuda_moe`: the MoE layer on a CUDA GPU (SM 8.0+), operands in device memory, the caller's
// stream, no host synchronisation in run(). prepare() uploads every expert's NVFP4 codes and
// linear scales (0.5625 B per weight, no BF16 copy), the global scales, the router (FP32) and the
// shared expert. run() enqueues, on the caller's stream:
//   route    x·routerᵀ (4 warps per expert, FP64 sums rounded to FP32), then softmax + top-k
//            (a block per token); skipped when the caller gives ids and weights on the device;
//   permute  per-expert counts, offsets and the active-expert list, (token, slot) entries grouped
//            by expert (a memset and three small kernels);
//   gate_up  ONE launch over all active experts: h = SiLU(x·gateᵀ)·(x·upᵀ), rounded to x's dtype;
//   down     ONE launch over all active experts: y = h·downᵀ per entry (FP32);
//   shared   the shared expert (NVFP4, or BF16/FP32 held as FP32) as one more group of all T
//            tokens through the same two kernels, and its sigmoid gate;
//   combine  out = Σ_slots weight·y + gate·shared, rounded once to out's dtype.
// The kernels are CUDA-core (FP32 FMA on decoded weights, cuda_moe_experts.cu): each active
// expert's weights are read once per chunk of 8 of its tokens, the decode design, while many
// tokens per expert (prefill) run at CUDA-core rate (the grouped tensor-core GEMM is future work).
// Scratch per call: one stream-ordered allocation (cudaMallocAsync, cuda::StreamBuffer) sized by
// workspace_layout(): no maximum T to fix in advance, and capture-safe (the graph records an
// allocation node and a free node).
// Not served (check_problem says so): W4A4, E > kMaxExperts, T > kMaxRoutedTokens with the router,
// T·k >= 2^31, a workspace beyond free memory.
#include "fp4gemm/moe/moe_backend.hpp"

namespace fp4gemm::moe {

class CudaMoeBackend final : public MoeBackend {
 public:
  std::string name() const override { return "cuda_moe"; }
  std::string summary() const override;
  Memory memory() const override { return Memory::cuda; }
  CheckResult check_device(const DeviceInfo& device) const override;
  CheckResult check_problem(const MoeProblem& problem, const DeviceInfo& device) const override;
  std::string plan(const MoeProblem& problem, const DeviceInfo& device) const override;
  std::unique_ptr<PreparedMoe> prepare(const MoeWeights& weights, const DeviceInfo& device) override;
  void run(const MoeCall& call, const PreparedMoe& layer, const MutableDenseView& out, const RunContext& context) override;
};

}  // namespace fp4gemm::moe
