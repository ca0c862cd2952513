// The host routing steps: router logits, softmax + top-k, and the permutation that groups tokens
// by expert. Every MoE backend that routes on the host calls these; a GPU backend may fuse them.
#include "fp4gemm/moe/moe_routing.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/host_rows.hpp"
#include "fp4gemm/error.hpp"
#include "moe/router_logits.hpp"

namespace fp4gemm::moe {
namespace {

// Below this many multiply-adds the router runs on the calling thread (waking the team costs more).
constexpr std::int64_t kParallelMinMultiplyAdds = 1 << 18;

}  // namespace

std::vector<float> router_by_hidden(const DenseView& router) {
  const std::int64_t experts = router.rows, hidden = router.cols;
  std::vector<float> transposed(static_cast<std::size_t>(experts * hidden));
  std::vector<float> row(static_cast<std::size_t>(hidden));
  for (std::int64_t e = 0; e < experts; ++e) {
    load_activation_row(ActivationView::from_dense(router), e, row.data());
    for (std::int64_t i = 0; i < hidden; ++i) transposed[std::size_t(i * experts + e)] = row[std::size_t(i)];
  }
  return transposed;
}

void router_logits_by_hidden(const DenseView& x, const float* router, std::int64_t experts, float* logits) {
  const std::int64_t tokens = x.rows, hidden = x.cols;
#pragma omp parallel for schedule(static) if (tokens > 1 && tokens * experts * hidden >= kParallelMinMultiplyAdds)
  for (std::int64_t token = 0; token < tokens; ++token) {
    std::vector<float> row(static_cast<std::size_t>(hidden));
    load_activation_row(ActivationView::from_dense(x), token, row.data());
    std::vector<double> sums(static_cast<std::size_t>(experts), 0.0);
    for (std::int64_t i = 0; i < hidden; ++i) {
      const double value = row[std::size_t(i)];
      const float* router_row = router + i * experts;
      for (std::int64_t e = 0; e < experts; ++e) sums[std::size_t(e)] += value * double(router_row[e]);
    }
    for (std::int64_t e = 0; e < experts; ++e) logits[token * experts + e] = float(sums[std::size_t(e)]);
  }
}

std::vector<float> router_logits(const DenseView& x, const DenseView& router) {
  if (x.cols != router.cols) {
    throw_invalid("router logits: x has " + std::to_string(x.cols) + " columns but the router " + std::to_string(router.cols));
  }
  const std::vector<float> transposed = router_by_hidden(router);
  std::vector<float> logits(static_cast<std::size_t>(x.rows * router.rows));
  router_logits_by_hidden(x, transposed.data(), router.rows, logits.data());
  return logits;
}

TopK route_from_logits(const float* logits, std::int64_t tokens, std::int64_t experts, int k, bool normalize) {
  if (k < 1 || k > experts) {
    throw_invalid("top_k = " + std::to_string(k) + " is outside [1, " + std::to_string(experts) + "]");
  }
  TopK routing;
  routing.tokens = tokens;
  routing.k = k;
  routing.ids.resize(static_cast<std::size_t>(tokens * k));
  routing.weights.resize(static_cast<std::size_t>(tokens * k));
  std::vector<std::int32_t> order(static_cast<std::size_t>(experts));
  for (std::int64_t token = 0; token < tokens; ++token) {
    const float* row = logits + token * experts;
    for (std::int64_t e = 0; e < experts; ++e) {
      if (!std::isfinite(row[e])) {
        throw_invalid("router logit of token " + std::to_string(token) + ", expert " + std::to_string(e) +
                      " is not finite (x · routerᵀ overflowed FP32)");
      }
    }
    const double largest = *std::max_element(row, row + experts);
    double total = 0.0;
    for (std::int64_t e = 0; e < experts; ++e) total += std::exp(double(row[e]) - largest);
    std::iota(order.begin(), order.end(), 0);
    // Larger logit first; equal logits: the lower expert index first.
    std::partial_sort(order.begin(), order.begin() + k, order.end(), [row](std::int32_t a, std::int32_t b) {
      return row[a] > row[b] || (row[a] == row[b] && a < b);
    });
    double chosen_total = 0.0;
    std::vector<double> probabilities(static_cast<std::size_t>(k));
    for (int slot = 0; slot < k; ++slot) {
      probabilities[std::size_t(slot)] = std::exp(double(row[order[std::size_t(slot)]]) - largest) / total;
      chosen_total += probabilities[std::size_t(slot)];
    }
    for (int slot = 0; slot < k; ++slot) {
      const std::size_t index = std::size_t(token * k + slot);
      routing.ids[index] = order[std::size_t(slot)];
      routing.weights[index] = float(normalize ? probabilities[std::size_t(slot)] / chosen_total
                                               : probabilities[std::size_t(slot)]);
    }
  }
  return routing;
}

std::int64_t Permutation::active_experts() const {
  std::int64_t active = 0;
  for (std::size_t e = 0; e + 1 < offsets.size(); ++e) active += offsets[e + 1] > offsets[e] ? 1 : 0;
  return active;
}

Permutation permute_by_expert(const TopK& routing, std::int64_t experts) {
  const std::int64_t entries = routing.tokens * routing.k;
  Permutation permutation;
  permutation.offsets.assign(static_cast<std::size_t>(experts + 1), 0);
  for (std::int64_t i = 0; i < entries; ++i) {
    const std::int32_t id = routing.ids[std::size_t(i)];
    if (id < 0 || id >= experts) {
      throw_invalid("top-k id " + std::to_string(id) + " of token " + std::to_string(i / routing.k) + " is outside [0, " +
                    std::to_string(experts) + ")");
    }
    ++permutation.offsets[std::size_t(id) + 1];
  }
  std::partial_sum(permutation.offsets.begin(), permutation.offsets.end(), permutation.offsets.begin());
  permutation.token.resize(static_cast<std::size_t>(entries));
  permutation.slot.resize(static_cast<std::size_t>(entries));
  std::vector<std::int64_t> next(permutation.offsets.begin(), permutation.offsets.end() - 1);
  // Token-major walk: within each expert, tokens land in ascending order.
  for (std::int64_t i = 0; i < entries; ++i) {
    const std::size_t position = std::size_t(next[std::size_t(routing.ids[std::size_t(i)])]++);
    permutation.token[position] = std::int32_t(i / routing.k);
    permutation.slot[position] = std::int32_t(i % routing.k);
  }
  return permutation;
}

}  // namespace fp4gemm::moe
