// The MoE benchmark harness: random layer, uniform routing, timing, and the OpenBLAS peer.
#include "bench/moe_bench.hpp"

#include <cblas.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>

#include "fp4gemm/error.hpp"
#include "fp4gemm/format/half.hpp"

namespace fp4gemm::bench {
namespace {

using Clock = std::chrono::steady_clock;

// Seeds of the random operands, distinct per role.
constexpr std::uint64_t kExpertSeed = 31, kSharedSeed = 37, kActivationSeed = 41, kRouterSeed = 47;

Nvfp4Matrix random_weight(std::int64_t rows, std::int64_t cols, std::uint64_t seed) {
  const std::vector<float> values = random_normal_values(rows * cols, seed);
  return quantize_weight(values.data(), rows, cols);
}

Nvfp4View view_of(const std::uint8_t* codes, const std::uint8_t* scales, float global_scale, std::int64_t rows, std::int64_t cols) {
  return {codes, scales, ScaleLayout::linear, global_scale, rows, cols, Memory::host, 0, rows * cols / 2, rows * cols / 16};
}

float silu(float value) { return value / (1.0f + std::exp(-value)); }

}  // namespace

std::string MoeBenchShape::to_string() const {
  return "E=" + std::to_string(experts) + " k=" + std::to_string(top_k) + " H=" + std::to_string(hidden) +
         " I=" + std::to_string(intermediate) + (shared_intermediate ? " shared I=" + std::to_string(shared_intermediate) : "");
}

moe::MoeProblem MoeBenchShape::problem(std::int64_t tokens, bool routing_given) const {
  return {tokens,        hidden,           intermediate,         experts, top_k, ActivationType::bf16, DType::bf16,
          routing_given, shared_intermediate > 0, shared_intermediate, false};
}

void check_moe_bench_shape(const MoeBenchShape& shape) {
  if (shape.experts < 1) throw_invalid("--experts must be 1 or more, not " + std::to_string(shape.experts));
  if (shape.top_k < 1 || shape.top_k > shape.experts) {
    throw_invalid("--topk must be between 1 and the expert count " + std::to_string(shape.experts) + ", not " + std::to_string(shape.top_k));
  }
  for (const auto& [flag, size] : {std::pair{"--hidden", shape.hidden}, {"--intermediate", shape.intermediate}}) {
    if (size < 16 || size % 16 != 0) throw_invalid(std::string(flag) + " must be a positive multiple of 16 (the NVFP4 block), not " + std::to_string(size));
  }
  if (shape.shared_intermediate < 0 || shape.shared_intermediate % 16 != 0) {
    throw_invalid("the shared expert's intermediate size must be a multiple of 16, not " + std::to_string(shape.shared_intermediate));
  }
}

MoeBenchLayer::MoeBenchLayer(const MoeBenchShape& shape) : shape_(shape) {
  check_moe_bench_shape(shape);
  const std::int64_t hidden = shape.hidden, inter = shape.intermediate;
  const int distinct = int(std::min<std::int64_t>(kDistinctExperts, shape.experts));
  for (int i = 0; i < distinct; ++i) {
    distinct_gate_up_.push_back(random_weight(2 * inter, hidden, kExpertSeed + 2 * std::uint64_t(i)));
    distinct_down_.push_back(random_weight(hidden, inter, kExpertSeed + 2 * std::uint64_t(i) + 1));
  }
  const std::size_t gate_up_codes = std::size_t(2 * inter * hidden / 2), gate_up_scales = std::size_t(2 * inter * hidden / 16);
  const std::size_t down_codes = std::size_t(hidden * inter / 2), down_scales = std::size_t(hidden * inter / 16);
  gate_up_codes_.resize(gate_up_codes * std::size_t(shape.experts));
  gate_up_scales_.resize(gate_up_scales * std::size_t(shape.experts));
  down_codes_.resize(down_codes * std::size_t(shape.experts));
  down_scales_.resize(down_scales * std::size_t(shape.experts));
#pragma omp parallel for schedule(static)
  for (std::int64_t e = 0; e < shape.experts; ++e) {
    const std::size_t i = std::size_t(e % distinct), slot = std::size_t(e);
    std::memcpy(&gate_up_codes_[slot * gate_up_codes], distinct_gate_up_[i].codes.data(), gate_up_codes);
    std::memcpy(&gate_up_scales_[slot * gate_up_scales], distinct_gate_up_[i].scales.data(), gate_up_scales);
    std::memcpy(&down_codes_[slot * down_codes], distinct_down_[i].codes.data(), down_codes);
    std::memcpy(&down_scales_[slot * down_scales], distinct_down_[i].scales.data(), down_scales);
  }
  if (shape.shared_intermediate > 0) {
    shared_gate_up_ = random_weight(2 * shape.shared_intermediate, hidden, kSharedSeed);
    shared_down_ = random_weight(hidden, shape.shared_intermediate, kSharedSeed + 1);
    shared_gate_f32_ = random_normal_values(hidden, kSharedSeed + 2);
    for (float& value : shared_gate_f32_) value = bf16_to_float(float_to_bf16(value * 0.05f));
    for (float value : shared_gate_f32_) shared_gate_bf16_.push_back(float_to_bf16(value));
  }
  // Logits x·router of about unit spread for x ~ N(0, 1): each router element N(0, 1/H).
  const float router_scale = 1.0f / std::sqrt(float(hidden));
  for (float value : random_normal_values(shape.experts * hidden, kRouterSeed)) router_bf16_.push_back(float_to_bf16(value * router_scale));
}

DenseView MoeBenchLayer::router() const {
  return {router_bf16_.data(), DType::bf16, shape_.experts, shape_.hidden, 0, Memory::host, 0, std::int64_t(router_bf16_.size() * 2)};
}

moe::MoeWeights MoeBenchLayer::weights() const {
  moe::MoeWeights weights;
  weights.layout = moe::ExpertLayout::fused_gate_up;
  const std::int64_t hidden = shape_.hidden, inter = shape_.intermediate;
  const int distinct = int(distinct_gate_up_.size());
  for (std::int64_t e = 0; e < shape_.experts; ++e) {
    const Nvfp4Matrix& gate_up = distinct_gate_up_[std::size_t(e % distinct)];
    const Nvfp4Matrix& down = distinct_down_[std::size_t(e % distinct)];
    const std::uint8_t* codes = gate_up_codes_.data() + e * inter * hidden;  // 2I x H / 2 per expert
    const std::uint8_t* scales = gate_up_scales_.data() + e * 2 * inter * hidden / 16;
    moe::ExpertProjections expert;
    expert.gate = view_of(codes, scales, gate_up.global_scale, inter, hidden);
    expert.up = view_of(codes + inter * hidden / 2, scales + inter * hidden / 16, gate_up.global_scale, inter, hidden);
    expert.down = view_of(down_codes_.data() + e * hidden * inter / 2, down_scales_.data() + e * hidden * inter / 16,
                          down.global_scale, hidden, inter);
    weights.experts.push_back(expert);
  }
  if (shape_.shared_intermediate > 0) {
    const std::int64_t shared = shape_.shared_intermediate;
    moe::SharedExpert expert;
    moe::ExpertProjections projections;
    const Nvfp4Matrix& gate_up = shared_gate_up_;
    projections.gate = view_of(gate_up.codes.data(), gate_up.scales.data(), gate_up.global_scale, shared, hidden);
    projections.up = view_of(gate_up.codes.data() + shared * hidden / 2, gate_up.scales.data() + shared * hidden / 16,
                             gate_up.global_scale, shared, hidden);
    projections.down = view_of(shared_down_.codes.data(), shared_down_.scales.data(), shared_down_.global_scale, hidden, shared);
    expert.nvfp4 = projections;
    expert.gate = {shared_gate_bf16_.data(), DType::bf16, 1, hidden, 0, Memory::host, 0, hidden * 2};
    weights.shared = expert;
  }
  weights.router = router();
  return weights;
}

std::vector<float> MoeBenchLayer::dequantized_gate_up(std::int64_t e) const {
  return distinct_gate_up_[std::size_t(e % std::int64_t(distinct_gate_up_.size()))].dequantize();
}

std::vector<float> MoeBenchLayer::dequantized_down(std::int64_t e) const {
  return distinct_down_[std::size_t(e % std::int64_t(distinct_down_.size()))].dequantize();
}

moe::TopK uniform_random_routing(std::int64_t tokens, std::int64_t experts, int top_k, std::uint64_t seed) {
  moe::TopK routing;
  routing.tokens = tokens;
  routing.k = top_k;
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> uniform(0.05f, 1.0f);
  std::vector<std::int32_t> order(static_cast<std::size_t>(experts));
  for (std::int64_t t = 0; t < tokens; ++t) {
    std::iota(order.begin(), order.end(), 0);
    // The first k of a partial Fisher-Yates shuffle: k distinct experts, each equally likely.
    for (int i = 0; i < top_k; ++i) {
      std::uniform_int_distribution<std::int64_t> pick(i, experts - 1);
      std::swap(order[std::size_t(i)], order[std::size_t(pick(rng))]);
    }
    float sum = 0;
    std::vector<float> weights(static_cast<std::size_t>(top_k));
    for (float& weight : weights) sum += weight = uniform(rng);
    for (int i = 0; i < top_k; ++i) {
      routing.ids.push_back(order[std::size_t(i)]);
      routing.weights.push_back(weights[std::size_t(i)] / sum);
    }
  }
  return routing;
}

std::int64_t count_active_experts(const moe::TopK& routing, std::int64_t experts) {
  std::vector<char> used(std::size_t(experts), 0);
  for (std::int32_t id : routing.ids) used[std::size_t(id)] = 1;
  return std::count(used.begin(), used.end(), 1);
}

double expected_active_experts(std::int64_t tokens, std::int64_t experts, int top_k) {
  return double(experts) * (1.0 - std::pow(1.0 - double(top_k) / double(experts), double(tokens)));
}

std::vector<moe::TopK> routing_draws(std::int64_t tokens, std::int64_t experts, int top_k, std::uint64_t seed) {
  std::vector<moe::TopK> draws;
  for (int i = 0; i < kRoutingDraws; ++i) draws.push_back(uniform_random_routing(tokens, experts, top_k, seed + std::uint64_t(i)));
  return draws;
}

RoutedDraws routed_draws(const MoeBenchLayer& layer, std::int64_t tokens, std::uint64_t seed) {
  const MoeBenchShape& shape = layer.shape();
  RoutedDraws draws;
  for (int i = 0; i < kRoutingDraws; ++i) {
    std::vector<float> x = random_normal_values(tokens * shape.hidden, seed + std::uint64_t(i));
    for (float& value : x) value = bf16_to_float(float_to_bf16(value));  // the values a BF16 x holds
    const std::vector<float> logits = moe::router_logits({x.data(), DType::f32, tokens, shape.hidden}, layer.router());
    draws.routings.push_back(moe::route_from_logits(logits.data(), tokens, shape.experts, shape.top_k, shape.norm_topk_prob));
    draws.x.push_back(std::move(x));
  }
  return draws;
}

MoeResult time_moe_call(const std::string& name, bool peer, const MoeBenchShape& shape, const std::vector<moe::TopK>& routings,
                        const MoeLayerCall& call, DType x_dtype, DType out_dtype, const std::vector<std::vector<float>>* draw_x) {
  if (routings.empty()) throw_invalid("time_moe_call needs at least one routing");
  double active = 0;
  for (const moe::TopK& routing : routings) active += double(count_active_experts(routing, shape.experts));
  MoeResult result{name, peer, routings.front().tokens, std::int64_t(std::lround(active / double(routings.size())))};
  const std::int64_t tokens = result.tokens, hidden = shape.hidden;
  if (draw_x != nullptr && draw_x->size() != routings.size()) throw_invalid("time_moe_call needs one x per routing");
  // x of each draw in x_dtype: draw_x's, or one seeded random x for all.
  std::vector<std::vector<float>> x_f32;
  if (draw_x == nullptr) x_f32.push_back(random_normal_values(tokens * hidden, kActivationSeed));
  const std::vector<std::vector<float>>& x_values = draw_x != nullptr ? *draw_x : x_f32;
  std::vector<std::vector<std::uint16_t>> x_bf16(x_dtype == DType::bf16 ? x_values.size() : 0);
  std::vector<DenseView> x;
  for (std::size_t d = 0; d < x_values.size(); ++d) {
    if (x_dtype != DType::bf16) {
      x.push_back({x_values[d].data(), DType::f32, tokens, hidden});
      continue;
    }
    for (float value : x_values[d]) x_bf16[d].push_back(float_to_bf16(value));
    x.push_back({x_bf16[d].data(), DType::bf16, tokens, hidden});
  }
  std::vector<std::uint8_t> out(std::size_t(tokens * hidden) * dtype_size(out_dtype));
  const auto output_value = [&](std::int64_t i) {
    if (out_dtype == DType::f32) {
      float value;
      std::memcpy(&value, out.data() + 4 * i, 4);
      return value;
    }
    std::uint16_t bits;
    std::memcpy(&bits, out.data() + 2 * i, 2);
    return out_dtype == DType::bf16 ? bf16_to_float(bits) : fp16_to_float(bits);
  };
  std::fill(out.begin(), out.end(), std::uint8_t(0xFF));  // NaN in every float format
  const MutableDenseView out_view{out.data(), out_dtype, tokens, hidden};
  std::size_t next = 0;
  const Timing timing = time_repeatedly(
      [&] {
        const moe::TopK& routing = routings[next];
        const DenseView& x_of_draw = x[x.size() == 1 ? 0 : next];
        next = (next + 1) % routings.size();
        const auto start = Clock::now();
        call(x_of_draw, routing, out_view);
        return std::chrono::duration<double, std::micro>(Clock::now() - start).count();
      },
      int(routings.size()), 200, 0.5);  // each draw once untimed: a backend's first touch of an expert is not a step's cost
  for (std::int64_t i = 0; i < tokens * hidden; ++i) {
    if (!std::isfinite(output_value(i))) {
      result.ok = false;
      result.note = "output element " + std::to_string(i) + " is not finite after the call: the result is wrong";
      return result;
    }
  }
  result.time_us = timing.median_us;
  result.spread = timing.spread;
  result.repeats = timing.repeats;
  result.note = "median of " + std::to_string(timing.repeats) + ", " + std::to_string(routings.size()) +
                (draw_x != nullptr ? " random x routed by the layer's router in turn" : " uniform random routings in turn");
  return result;
}

std::optional<std::string> OpenblasMoePeer::skip_reason(const MoeBenchShape& shape) {
  const double bytes = 4.0 * double(shape.experts * 3 * shape.hidden * shape.intermediate + 3 * shape.hidden * shape.shared_intermediate);
  const double memory = double(sysconf(_SC_PHYS_PAGES)) * double(sysconf(_SC_PAGE_SIZE));
  if (memory > 0 && bytes <= memory / 4) return std::nullopt;
  return "its FP32 experts would take " + std::to_string(std::int64_t(bytes / (1 << 30))) +
         " GiB, over a quarter of this host's memory";
}

OpenblasMoePeer::OpenblasMoePeer(const MoeBenchLayer& layer) : shape_(layer.shape()) {
  const std::int64_t distinct = std::min<std::int64_t>(MoeBenchLayer::kDistinctExperts, shape_.experts);
  for (std::int64_t e = 0; e < shape_.experts; ++e) {
    gate_up_.push_back(e < distinct ? layer.dequantized_gate_up(e) : gate_up_[std::size_t(e % distinct)]);
    down_.push_back(e < distinct ? layer.dequantized_down(e) : down_[std::size_t(e % distinct)]);
  }
  if (layer.shared_gate_up()) {
    shared_gate_up_ = layer.shared_gate_up()->dequantize();
    shared_down_ = layer.shared_down()->dequantize();
    shared_gate_ = layer.shared_gate();
  }
}

void OpenblasMoePeer::operator()(const DenseView& x_view, const moe::TopK& routing, const MutableDenseView& out_view) const {
  const std::int64_t tokens = routing.tokens, hidden = shape_.hidden, inter = shape_.intermediate;
  const float* x = static_cast<const float*>(x_view.data);
  float* out = static_cast<float*>(out_view.data);
  std::fill(out, out + tokens * hidden, 0.0f);
  // Tokens grouped by expert, so each active expert's weights stream once per call.
  std::vector<std::vector<std::pair<std::int64_t, float>>> groups(std::size_t(shape_.experts));
  for (std::int64_t i = 0; i < tokens * routing.k; ++i)
    groups[std::size_t(routing.ids[std::size_t(i)])].push_back({i / routing.k, routing.weights[std::size_t(i)]});
  std::vector<float> gathered, gate_up, h, y;
  // Runs one FFN (gate_up [2I', H], down [H, I']) on `rows` gathered rows; y = its output [rows, H].
  const auto ffn = [&](const float* input, std::int64_t rows, const float* w_gate_up, const float* w_down, std::int64_t width) {
    gate_up.resize(std::size_t(rows * 2 * width));
    h.resize(std::size_t(rows * width));
    y.resize(std::size_t(rows * hidden));
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(rows), int(2 * width), int(hidden), 1.0f, input, int(hidden), w_gate_up,
                int(hidden), 0.0f, gate_up.data(), int(2 * width));
    for (std::int64_t r = 0; r < rows; ++r)
      for (std::int64_t j = 0; j < width; ++j)
        h[std::size_t(r * width + j)] = silu(gate_up[std::size_t(r * 2 * width + j)]) * gate_up[std::size_t(r * 2 * width + width + j)];
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(rows), int(hidden), int(width), 1.0f, h.data(), int(width), w_down,
                int(width), 0.0f, y.data(), int(hidden));
  };
  for (std::int64_t e = 0; e < shape_.experts; ++e) {
    const auto& group = groups[std::size_t(e)];
    if (group.empty()) continue;
    const std::int64_t rows = std::int64_t(group.size());
    gathered.resize(std::size_t(rows * hidden));
    for (std::int64_t r = 0; r < rows; ++r)
      std::memcpy(&gathered[std::size_t(r * hidden)], x + group[std::size_t(r)].first * hidden, std::size_t(hidden) * 4);
    ffn(gathered.data(), rows, gate_up_[std::size_t(e)].data(), down_[std::size_t(e)].data(), inter);
    for (std::int64_t r = 0; r < rows; ++r) {
      float* row = out + group[std::size_t(r)].first * hidden;
      const float weight = group[std::size_t(r)].second;
      for (std::int64_t j = 0; j < hidden; ++j) row[j] += weight * y[std::size_t(r * hidden + j)];
    }
  }
  if (!shared_gate_up_.empty()) {
    ffn(x, tokens, shared_gate_up_.data(), shared_down_.data(), shape_.shared_intermediate);
    for (std::int64_t t = 0; t < tokens; ++t) {
      const float logit = cblas_sdot(int(hidden), x + t * hidden, 1, shared_gate_.data(), 1);
      const float gate = 1.0f / (1.0f + std::exp(-logit));
      for (std::int64_t j = 0; j < hidden; ++j) out[t * hidden + j] += gate * y[std::size_t(t * hidden + j)];
    }
  }
}

}  // namespace fp4gemm::bench
