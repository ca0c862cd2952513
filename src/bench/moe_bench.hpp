#pragma once
// The MoE side of `fp4gemm bench`: a random NVFP4 layer made once per shape, uniform random
// routing (seeded), an MoE call timed like the GEMMs, and the OpenBLAS peer (SGEMM per active
// expert on the experts dequantized to FP32). The layer itself runs through a callable, so the
// harness does not depend on which implementation serves it.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "bench/bench.hpp"
#include "fp4gemm/format/nvfp4_matrix.hpp"
#include "fp4gemm/moe/moe_layer.hpp"
#include "fp4gemm/moe/moe_routing.hpp"

namespace fp4gemm::bench {

struct MoeBenchShape {
  std::int64_t experts = 0, hidden = 0, intermediate = 0;
  std::int64_t shared_intermediate = 0;  // 0: no shared expert
  int top_k = 1;
  bool norm_topk_prob = true;
  std::string to_string() const;  // "E=512 k=10 H=4096 I=1024 shared I=1024"
  // The layer's call at `tokens` with BF16 x and out (an NVFP4 shared expert when it has one),
  // routed by its router unless `routing_given`.
  moe::MoeProblem problem(std::int64_t tokens, bool routing_given) const;
};

// Throws Error(invalid_argument) naming the flag for sizes below 1, k outside [1, E], or H, I or
// the shared I not a multiple of 16.
void check_moe_bench_shape(const MoeBenchShape& shape);

// A random layer in the fused gate_up layout, with a random BF16 router [E, H] (scaled so a random
// normal x gives logits of about unit spread, as a trained router's): the uniform-routing rows give
// their routing (which wins over the router), the router rows let the layer route x itself.
// NOTE: kDistinctExperts random experts are quantized and copied into all E slots: every expert has
// its own memory (so the bytes streamed are those of E experts) while a 512-expert layer is made in
// about a second instead of quantizing 6 G random values.
class MoeBenchLayer {
 public:
  static constexpr int kDistinctExperts = 4;
  explicit MoeBenchLayer(const MoeBenchShape& shape);
  const MoeBenchShape& shape() const { return shape_; }
  moe::MoeWeights weights() const;
  // Expert e's weights dequantized to FP32: gate_up [2I, H], down [H, I].
  std::vector<float> dequantized_gate_up(std::int64_t e) const;
  std::vector<float> dequantized_down(std::int64_t e) const;
  const Nvfp4Matrix* shared_gate_up() const { return shape_.shared_intermediate ? &shared_gate_up_ : nullptr; }
  const Nvfp4Matrix* shared_down() const { return shape_.shared_intermediate ? &shared_down_ : nullptr; }
  const std::vector<float>& shared_gate() const { return shared_gate_f32_; }
  DenseView router() const;  // [E, H] BF16, host

 private:
  MoeBenchShape shape_;
  std::vector<Nvfp4Matrix> distinct_gate_up_, distinct_down_;
  std::vector<std::uint8_t> gate_up_codes_, gate_up_scales_, down_codes_, down_scales_;
  Nvfp4Matrix shared_gate_up_, shared_down_;
  std::vector<float> shared_gate_f32_;
  std::vector<std::uint16_t> shared_gate_bf16_;
  std::vector<std::uint16_t> router_bf16_;
};

// Each token's k experts drawn uniformly without repetition (seeded), weights random positive
// summing to 1: the routing of a well-balanced router.
moe::TopK uniform_random_routing(std::int64_t tokens, std::int64_t experts, int top_k, std::uint64_t seed);

// Experts that at least one token of `routing` goes to.
std::int64_t count_active_experts(const moe::TopK& routing, std::int64_t experts);

// The expected number of experts T tokens touch under uniform routing: E·(1 − (1 − k/E)^T).
double expected_active_experts(std::int64_t tokens, std::int64_t experts, int top_k);

// One MoE call: out [T, H] = the layer on x [T, H] with the given routing.
using MoeLayerCall = std::function<void(const DenseView& x, const moe::TopK& routing, const MutableDenseView& out)>;

struct MoeResult {
  std::string name;
  bool peer = false;
  std::int64_t tokens = 0;
  std::int64_t active_experts = 0;
  double time_us = 0, spread = 0;
  int repeats = 0;
  std::string note;
  bool ok = true;
  // The call ran the layer's router (logits, softmax, top-k) on x before the experts: the whole
  // layer. Otherwise the routing was given, as serving engines that route outside the layer pass it.
  bool routed = false;
  // The output against `ref` on a few tokens (moe_peer_plan.hpp); checked_tokens 0: not checked.
  double relative_error = 0;
  std::int64_t checked_tokens = 0;
  // Ours: the plan the serving backend ran (MoeBackend::plan, what `explain` prints): which
  // kernels ran and why. Empty for the peers.
  std::string kernel;
};

// Routing draws a timing cycles through: repeating one draw would keep its few experts in the
// last-level cache at small T (10 experts of 4096 x 1024 are 70 MB), which no decode step sees.
inline constexpr int kRoutingDraws = 8;

// kRoutingDraws seeded uniform routings (seed, seed + 1, ...) of the same T, E and k.
std::vector<moe::TopK> routing_draws(std::int64_t tokens, std::int64_t experts, int top_k, std::uint64_t seed);

// The router rows' inputs: kRoutingDraws random x [T, H] (seeds seed, seed + 1, ...; values exact
// in BF16), each with the routing the layer's router gives it (moe::router_logits, then
// route_from_logits: the oracle's routing), so their active experts are counted and the first is
// checked as the given-routing rows are.
struct RoutedDraws {
  std::vector<std::vector<float>> x;
  std::vector<moe::TopK> routings;
};
RoutedDraws routed_draws(const MoeBenchLayer& layer, std::int64_t tokens, std::uint64_t seed);

// Times `call` call after call through `routings` (the same T) on x (`x_dtype`, BF16 or F32): one
// random x for every call, or with `draw_x` x[d] for the call of routings[d]. active_experts is
// the routings' mean, rounded. The output (`out_dtype`) is poisoned with NaN first and checked to
// be finite after the timing, so a call that writes nothing does not pass for a fast one.
MoeResult time_moe_call(const std::string& name, bool peer, const MoeBenchShape& shape, const std::vector<moe::TopK>& routings,
                        const MoeLayerCall& call, DType x_dtype, DType out_dtype,
                        const std::vector<std::vector<float>>* draw_x = nullptr);

// The OpenBLAS peer: the layer on FP32 experts (dequantized), tokens grouped by expert, one
// SGEMM for gate_up and one for down per active expert, FP32 x and output.
class OpenblasMoePeer {
 public:
  // Empty when the FP32 experts fit in a quarter of the host memory; else why the peer is skipped.
  static std::optional<std::string> skip_reason(const MoeBenchShape& shape);
  explicit OpenblasMoePeer(const MoeBenchLayer& layer);
  void operator()(const DenseView& x, const moe::TopK& routing, const MutableDenseView& out) const;

 private:
  MoeBenchShape shape_;
  std::vector<std::vector<float>> gate_up_, down_;
  std::vector<float> shared_gate_up_, shared_down_, shared_gate_;
};

}  // namespace fp4gemm::bench
