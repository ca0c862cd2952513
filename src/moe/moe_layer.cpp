// The layer's descriptive helpers: sizes of the weights, and the problem's name, bytes and FLOPs.
#include "fp4gemm/moe/moe_layer.hpp"

#include <sstream>

#include "fp4gemm/format/nvfp4_matrix.hpp"

namespace fp4gemm::moe {

const char* to_string(ExpertLayout layout) {
  return layout == ExpertLayout::separate ? "separate" : "fused_gate_up";
}

std::int64_t SharedExpert::intermediate() const { return nvfp4 ? nvfp4->gate.rows : dense_gate.rows; }

std::int64_t MoeWeights::hidden() const { return experts.empty() ? 0 : experts.front().gate.cols; }
std::int64_t MoeWeights::intermediate() const { return experts.empty() ? 0 : experts.front().gate.rows; }

std::string MoeProblem::to_string() const {
  std::ostringstream text;
  text << "T=" << tokens << " H=" << hidden << " I=" << intermediate << " E=" << experts << " k=" << top_k
       << " a=" << fp4gemm::to_string(activation) << " out=" << fp4gemm::to_string(output);
  if (routing_given) text << " routing=given";
  if (shared_expert) text << " shared" << (shared_dense ? "=dense" : "");
  return text.str();
}

double MoeProblem::minimal_bytes(std::int64_t active_experts) const {
  const double expert_bytes = 3.0 * double(hidden) * double(intermediate) * kNvfp4BytesPerElement;
  const double shared_elements = shared_expert ? 3.0 * double(hidden) * double(shared_intermediate) : 0.0;
  const double shared_bytes = shared_elements * (shared_dense ? 2.0 : kNvfp4BytesPerElement);
  const double router_bytes = routing_given ? 0.0 : double(experts) * double(hidden) * 4.0;
  const double input_bytes = double(tokens) * double(hidden) * (activation == ActivationType::f32 ? 4.0 : 2.0);
  const double output_bytes = double(tokens) * double(hidden) * double(dtype_size(output));
  return double(active_experts) * expert_bytes + shared_bytes + router_bytes + input_bytes + output_bytes;
}

double MoeProblem::flops() const {
  const double t = double(tokens), h = double(hidden);
  double total = 2.0 * t * double(top_k) * 3.0 * h * double(intermediate);
  if (shared_expert) total += 2.0 * t * 3.0 * h * double(shared_intermediate) + 2.0 * t * h;
  if (!routing_given) total += 2.0 * t * double(experts) * h;
  return total;
}

}  // namespace fp4gemm::moe
