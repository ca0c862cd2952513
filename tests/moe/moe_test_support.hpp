#pragma once
// MoE test cases: a reproducible random layer (src/moe/random_moe_layer.hpp), hidden states,
// routing (by the router, random given ids, or every token on one expert), a poisoned output, and
// the check of every output element against the FP64 oracle with its per-element tolerance.
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "fp4gemm/moe/moe_backend.hpp"
#include "moe/moe_reference.hpp"
#include "moe/random_moe_layer.hpp"

namespace fp4gemm::moe::testing {

enum class Routing { router, given, given_one_expert };

struct MoeCase {
  std::int64_t tokens = 3;
  RandomMoeSpec layer;
  int top_k = 2;
  bool norm_topk_prob = true;
  DType input = DType::bf16;
  DType output = DType::f32;
  bool w4a4 = false;
  Routing routing = Routing::router;
  std::string to_string() const;
};

// The problem a case poses (its shapes, k and output type; W4A16, router routing, no shared expert).
MoeProblem problem_of(const MoeCase& c);

// What an FP32-accumulating backend may differ from FP64 by, relative to Σ|a·w| (moe_reference.hpp).
inline constexpr double kAccumulationError = 1e-4;

// Everything one call needs; `call` points into the other members (movable, not copyable).
struct MoeInputs {
  RandomMoeLayer layer;
  RandomHiddenStates x;
  std::vector<std::int32_t> topk_ids;
  std::vector<float> topk_weights;
  MoeCall call;
};
MoeInputs make_moe_inputs(const MoeCase& c, std::mt19937_64& rng);

// An output buffer of 0xFF bytes (NaN in FP32, BF16 and FP16), so unwritten elements fail.
struct PoisonedMoeOutput {
  std::vector<std::uint8_t> bytes;
  MutableDenseView view;
};
PoisonedMoeOutput make_poisoned_moe_output(std::int64_t tokens, std::int64_t hidden, DType dtype);
bool still_poisoned(const PoisonedMoeOutput& out);

// The MoE backends of this build that take host operands (GPU ones have tests/gpu/moe).
std::vector<std::string> host_moe_backend_names();

// Prepares the layer on `backend`, runs the case into a poisoned output and compares every element
// with the oracle. "" when all pass, else the seed, the case and the first mismatches.
std::string run_and_compare(MoeBackend& backend, const MoeCase& c);

}  // namespace fp4gemm::moe::testing
