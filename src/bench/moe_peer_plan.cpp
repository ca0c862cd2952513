#include "bench/moe_peer_plan.hpp"

#include <cmath>
#include <cstdio>
#include <limits>

#include "fp4gemm/error.hpp"
#include "fp4gemm/format/half.hpp"
#include "moe/moe_reference.hpp"

namespace fp4gemm::bench {

MoePeerPlan plan_moe_peer(const moe::TopK& routing, std::int64_t experts) {
  const moe::Permutation permutation = moe::permute_by_expert(routing, experts);
  MoePeerPlan plan;
  plan.tokens = routing.tokens;
  plan.top_k = routing.k;
  const std::size_t entries = std::size_t(routing.tokens) * std::size_t(routing.k);
  plan.gather.assign(permutation.token.begin(), permutation.token.end());
  plan.combine_rows.assign(entries, -1);
  plan.combine_weights.assign(entries, 0.0f);
  for (std::int64_t e = 0; e < experts; ++e) {
    const std::int64_t begin = permutation.offsets[std::size_t(e)], end = permutation.offsets[std::size_t(e) + 1];
    if (begin == end) continue;
    plan.experts.push_back(std::int32_t(e));
    plan.rows.push_back(end - begin);
    plan.first_row.push_back(begin);
    for (std::int64_t row = begin; row < end; ++row) {
      const std::size_t entry = std::size_t(permutation.token[std::size_t(row)]) * std::size_t(routing.k) +
                                std::size_t(permutation.slot[std::size_t(row)]);
      plan.combine_rows[entry] = std::int32_t(row);
      plan.combine_weights[entry] = routing.weights[entry];
    }
  }
  return plan;
}

std::vector<std::int64_t> expert_token_counts(const moe::TopK& routing, std::int64_t experts) {
  std::vector<std::int64_t> counts(std::size_t(experts), 0);
  for (std::int32_t id : routing.ids) {
    if (id < 0 || id >= experts) throw_invalid("routing names expert " + std::to_string(id) + ", outside [0, " + std::to_string(experts) + ")");
    ++counts[std::size_t(id)];
  }
  return counts;
}

std::vector<std::int32_t> touched_experts(const std::vector<moe::TopK>& routings, std::int64_t experts) {
  std::vector<char> used(std::size_t(experts), 0);
  for (const moe::TopK& routing : routings) {
    const std::vector<std::int64_t> counts = expert_token_counts(routing, experts);
    for (std::int64_t e = 0; e < experts; ++e) used[std::size_t(e)] |= counts[std::size_t(e)] > 0;
  }
  std::vector<std::int32_t> touched;
  for (std::int64_t e = 0; e < experts; ++e)
    if (used[std::size_t(e)]) touched.push_back(std::int32_t(e));
  return touched;
}

std::vector<std::int64_t> check_tokens(std::int64_t tokens, int count) {
  std::vector<std::int64_t> indices;
  if (tokens <= count) {
    for (std::int64_t t = 0; t < tokens; ++t) indices.push_back(t);
    return indices;
  }
  if (count == 1) return {0};
  for (int i = 0; i < count; ++i) {
    const std::int64_t t = std::int64_t(i) * (tokens - 1) / (count - 1);
    if (indices.empty() || t != indices.back()) indices.push_back(t);
  }
  return indices;
}

std::vector<double> reference_rows(const moe::MoeWeights& weights, const std::vector<float>& x, std::int64_t hidden,
                                   const moe::TopK& routing, const std::vector<std::int64_t>& indices) {
  const std::int64_t count = std::int64_t(indices.size());
  const int k = routing.k;
  std::vector<double> rows(std::size_t(count * hidden));
  // One token per `ref` call, in parallel: the oracle is single-threaded FP64 and each token of the
  // 512-expert layer costs it tens of milliseconds.
#pragma omp parallel for schedule(dynamic, 1)
  for (std::int64_t i = 0; i < count; ++i) {
    const std::int64_t token = indices[std::size_t(i)];
    std::vector<std::uint16_t> row(static_cast<std::size_t>(hidden));
    for (std::int64_t c = 0; c < hidden; ++c) row[std::size_t(c)] = float_to_bf16(x[std::size_t(token * hidden + c)]);
    const std::vector<std::int32_t> ids(routing.ids.begin() + token * k, routing.ids.begin() + (token + 1) * k);
    const std::vector<float> routing_weights(routing.weights.begin() + token * k, routing.weights.begin() + (token + 1) * k);
    moe::MoeCall call;
    call.x = {row.data(), DType::bf16, 1, hidden};
    call.routing = {ids.data(), routing_weights.data()};
    call.options.top_k = k;
    call.options.activation = ActivationType::bf16;
    const moe::MoeReference reference = moe::reference_moe(weights, call, 0.0);
    std::copy(reference.values.begin(), reference.values.end(), rows.begin() + i * hidden);
  }
  return rows;
}

double relative_error(const std::vector<float>& got, const std::vector<double>& expected) {
  if (got.size() != expected.size()) throw_invalid("relative_error: " + std::to_string(got.size()) + " values against " +
                                                   std::to_string(expected.size()));
  double difference = 0.0, norm = 0.0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (!std::isfinite(got[i])) return std::numeric_limits<double>::infinity();
    difference += (double(got[i]) - expected[i]) * (double(got[i]) - expected[i]);
    norm += expected[i] * expected[i];
  }
  return norm > 0.0 ? std::sqrt(difference / norm) : (difference > 0.0 ? std::numeric_limits<double>::infinity() : 0.0);
}

std::string describe_check(double error, std::int64_t tokens) {
  char text[160];
  std::snprintf(text, sizeof text, "relative error %.4g against ref on %lld token%s%s", error, (long long)tokens, tokens == 1 ? "" : "s",
                error > kGrossRelativeError || !std::isfinite(error) ? " (GROSS: the result is wrong)" : "");
  return text;
}

}  // namespace fp4gemm::bench
