#include "moe/moe_test_support.hpp"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <sstream>

#include "fp4gemm/device.hpp"
#include "fp4gemm/moe/moe_runner.hpp"
#include "support/test_support.hpp"

namespace fp4gemm::moe::testing {

std::string MoeCase::to_string() const {
  std::ostringstream text;
  text << "T=" << tokens << " E=" << layer.experts << " H=" << layer.hidden << " I=" << layer.intermediate
       << " k=" << top_k << (norm_topk_prob ? " norm" : "") << " layout=" << moe::to_string(layer.layout)
       << " x=" << fp4gemm::to_string(input) << " out=" << fp4gemm::to_string(output) << (w4a4 ? " W4A4" : "")
       << " routing=" << (routing == Routing::router ? "router" : routing == Routing::given ? "given" : "one expert")
       << " shared=" << (layer.shared == SharedKind::none ? "none" : layer.shared == SharedKind::nvfp4 ? "nvfp4" : "dense");
  return text.str();
}

MoeProblem problem_of(const MoeCase& c) {
  MoeProblem p;
  p.tokens = c.tokens;
  p.hidden = c.layer.hidden;
  p.intermediate = c.layer.intermediate;
  p.experts = c.layer.experts;
  p.top_k = c.top_k;
  p.output = c.output;
  return p;
}

MoeInputs make_moe_inputs(const MoeCase& c, std::mt19937_64& rng) {
  MoeInputs inputs;
  RandomMoeSpec spec = c.layer;
  spec.router = c.routing == Routing::router;
  inputs.layer = make_random_moe_layer(spec, rng);
  inputs.x = make_random_hidden_states(c.tokens, spec.hidden, c.input, rng);
  inputs.call.x = inputs.x.view();
  inputs.call.options.top_k = c.top_k;
  inputs.call.options.norm_topk_prob = c.norm_topk_prob;
  inputs.call.options.activation = c.w4a4 ? ActivationType::nvfp4 : (c.input == DType::bf16 ? ActivationType::bf16 : ActivationType::f32);
  if (c.routing != Routing::router) {
    std::uniform_real_distribution<float> weight(-0.25f, 1.0f);  // given weights are used as given, even negative
    std::uniform_int_distribution<std::int64_t> pick_expert(0, spec.experts - 1);
    const std::int64_t one_expert = pick_expert(rng);
    std::vector<std::int32_t> experts(static_cast<std::size_t>(spec.experts));
    for (std::int64_t t = 0; t < c.tokens; ++t) {
      std::iota(experts.begin(), experts.end(), 0);
      std::shuffle(experts.begin(), experts.end(), rng);
      for (int slot = 0; slot < c.top_k; ++slot) {
        // Every token on one expert: all its k slots name it.
        inputs.topk_ids.push_back(c.routing == Routing::given ? experts[std::size_t(slot)] : std::int32_t(one_expert));
        inputs.topk_weights.push_back(weight(rng));
      }
    }
    inputs.call.routing.topk_ids = inputs.topk_ids.data();
    inputs.call.routing.topk_weights = inputs.topk_weights.data();
  }
  return inputs;
}

PoisonedMoeOutput make_poisoned_moe_output(std::int64_t tokens, std::int64_t hidden, DType dtype) {
  PoisonedMoeOutput out;
  out.bytes.assign(static_cast<std::size_t>(tokens * hidden) * dtype_size(dtype), 0xFF);
  out.view = {out.bytes.data(), dtype, tokens, hidden, 0, Memory::host, 0, std::int64_t(out.bytes.size())};
  return out;
}

bool still_poisoned(const PoisonedMoeOutput& out) {
  return std::all_of(out.bytes.begin(), out.bytes.end(), [](std::uint8_t byte) { return byte == 0xFF; });
}

std::vector<std::string> host_moe_backend_names() {
  std::vector<std::string> names;
  for (const auto& backend : make_all_moe_backends())
    if (backend->memory() == Memory::host) names.push_back(backend->name());
  return names;
}

std::string run_and_compare(MoeBackend& backend, const MoeCase& c) {
  const std::uint64_t seed = fp4gemm::testing::fresh_seed();
  std::mt19937_64 rng(seed);
  const MoeInputs inputs = make_moe_inputs(c, rng);
  const auto prepared = backend.prepare(inputs.layer.weights, probe_cpu());
  PoisonedMoeOutput out = make_poisoned_moe_output(c.tokens, c.layer.hidden, c.output);
  backend.run(inputs.call, *prepared, out.view, {});
  const MoeReference reference = reference_moe(inputs.layer.weights, inputs.call, kAccumulationError);
  const std::string failures = compare_with_moe_reference(reference, out.view.as_const());
  if (failures.empty()) return "";
  return "backend '" + backend.name() + "', " + c.to_string() + ", seed " + std::to_string(seed) + ":\n" + failures;
}

}  // namespace fp4gemm::moe::testing
