#pragma once
// A mixture-of-experts layer over NVFP4 experts (Qwen3-MoE / Qwen3.5 style):
//   route:   logits = x · routerᵀ (FP32), probabilities = softmax(logits), top-k (ties to the lower
//            expert index), optionally renormalised so the k weights sum to 1 (norm_topk_prob);
//            or top-k ids and weights given by the caller, as serving engines pass them.
//   experts: for each token and each of its k experts e:
//              h = SiLU(x · gate_eᵀ) ⊙ (x · up_eᵀ)      [I]
//              y += weight · (h · down_eᵀ)               [H]
//   shared:  y += sigmoid(x · shared_gateᵀ) · down_s(SiLU(x · gate_sᵀ) ⊙ (x · up_sᵀ))   (optional)
// The views never own memory. Nothing here is tied to a backend: backends (moe_backend.hpp) take
// these views, prepare their own layout once, and run.
// NOTE: CUDA sources may include this header (not moe_runner.hpp): keep it C++17.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "fp4gemm/types.hpp"

namespace fp4gemm::moe {

// One expert's three NVFP4 projections. Each view carries its own global scale (weight_scale_2).
// gate, up: [I, H]; down: [H, I]. A fused gate_up [E, 2I, H] checkpoint tensor is two views into
// the same buffer: gate = rows [0, I), up = rows [I, 2I) (the Hugging Face fused-expert order).
struct ExpertProjections {
  Nvfp4View gate;
  Nvfp4View up;
  Nvfp4View down;
  // ModelOpt's activation global scales (input_scale) of the GEMMs that read x (gate, up) and h
  // (down); used only when the layer runs W4A4 (MoeOptions::activation == nvfp4). 0: absent.
  float gate_up_input_scale = 0.0f;
  float down_input_scale = 0.0f;
};

// How the expert weights were stored, for reports (`fp4gemm inspect`, explain); the math is the same.
enum class ExpertLayout { separate, fused_gate_up };
const char* to_string(ExpertLayout layout);

// The shared expert: NVFP4 projections or BF16/FP32 dense ones ([I_s, H], [I_s, H], [H, I_s]),
// plus its sigmoid gate [1, H] (dense). Dense projections are used when `nvfp4` is empty.
struct SharedExpert {
  std::optional<ExpertProjections> nvfp4;
  DenseView dense_gate, dense_up, dense_down;
  DenseView gate;  // shared_expert_gate.weight [1, H]; data == nullptr: no sigmoid gate (weight 1)
  std::int64_t intermediate() const;
};

// Every weight of one layer. `experts.size()` is E.
struct MoeWeights {
  std::vector<ExpertProjections> experts;
  ExpertLayout layout = ExpertLayout::separate;
  DenseView router;  // gate.weight [E, H], BF16 or FP32; data == nullptr when routing is given
  std::optional<SharedExpert> shared;
  std::int64_t hidden() const;        // H, from the first expert
  std::int64_t intermediate() const;  // I, from the first expert
  std::int64_t num_experts() const { return std::int64_t(experts.size()); }
};

struct MoeOptions {
  int top_k = 1;
  bool norm_topk_prob = true;
  // bf16/f32: W4A16 (x and h used as given; h is rounded to x's dtype between the GEMMs, as the
  // engines' BF16 data flow does); both mean W4A16 and x's dtype decides which.
  // nvfp4: W4A4, x and h (h first rounded to x's dtype) quantized with each expert's input_scale by
  // quantize_activation (format/nvfp4_matrix.hpp); an NVFP4 shared expert likewise, a dense one
  // stays W16A16.
  ActivationType activation = ActivationType::bf16;
};

// Caller-given routing: ids [T, k] in [0, E), weights [T, k] (used as given: no renormalisation).
// An expert may appear more than once in a token's row; each appearance counts.
struct RoutingView {
  const std::int32_t* topk_ids = nullptr;
  const float* topk_weights = nullptr;
  Memory memory = Memory::host;
  int device = 0;
};

// One layer call. Exactly one of `routing` (given) and the router in MoeWeights decides routing;
// when both are present the given routing wins.
struct MoeProblem {
  std::int64_t tokens = 0;        // T
  std::int64_t hidden = 0;        // H
  std::int64_t intermediate = 0;  // I
  std::int64_t experts = 0;       // E
  int top_k = 1;
  ActivationType activation = ActivationType::bf16;  // x's dtype, or nvfp4 for W4A4
  DType output = DType::bf16;
  bool routing_given = false;
  bool shared_expert = false;
  std::int64_t shared_intermediate = 0;  // I_s, when shared_expert
  bool shared_dense = false;             // the shared expert's projections are BF16/FP32, not NVFP4
  // "T=1 H=4096 I=1024 E=512 k=10 a=bf16 out=bf16", then " routing=given" and " shared" (NVFP4)
  // or " shared=dense" when they apply.
  std::string to_string() const;
  // Fewest bytes one call must move: each expert that `active_experts` names once (gate, up and
  // down at 0.5625 B/element), the shared expert, x and y.
  double minimal_bytes(std::int64_t active_experts) const;
  double flops() const;  // 2·T·k·3·H·I plus the shared expert and the router
};

}  // namespace fp4gemm::moe
