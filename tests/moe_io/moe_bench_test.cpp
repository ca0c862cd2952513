// The MoE bench harness: routing draws, the OpenBLAS peer against a direct FP64 evaluation, the
// timing's poisoned-output check, and the decode-step arithmetic.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "bench/model_step_report.hpp"
#include "bench/moe_bench.hpp"
#include "fp4gemm/error.hpp"
#include "fp4gemm/format/half.hpp"

namespace fp4gemm::bench {
namespace {

TEST(MoeBench, UniformRoutingDrawsKDistinctExpertsWithWeightsSummingToOne) {
  const moe::TopK routing = uniform_random_routing(50, 12, 3, 5);
  ASSERT_EQ(routing.ids.size(), 150u);
  for (std::int64_t t = 0; t < 50; ++t) {
    std::set<std::int32_t> ids;
    double sum = 0;
    for (int i = 0; i < 3; ++i) {
      const std::int32_t id = routing.ids[std::size_t(t * 3 + i)];
      EXPECT_TRUE(id >= 0 && id < 12) << id;
      ids.insert(id);
      EXPECT_GT(routing.weights[std::size_t(t * 3 + i)], 0.0f);
      sum += routing.weights[std::size_t(t * 3 + i)];
    }
    EXPECT_EQ(ids.size(), 3u) << "token " << t;
    EXPECT_NEAR(sum, 1.0, 1e-5);
  }
  EXPECT_EQ(uniform_random_routing(50, 12, 3, 5).ids, routing.ids) << "seeded";
  EXPECT_EQ(count_active_experts(uniform_random_routing(1, 512, 10, 1), 512), 10);
  EXPECT_EQ(count_active_experts(routing, 12), 12) << "150 draws over 12 experts touch them all";
  EXPECT_NEAR(expected_active_experts(1, 512, 10), 10.0, 1e-9);
  EXPECT_NEAR(expected_active_experts(4096, 512, 10), 512.0, 1e-3);
}

TEST(MoeBench, ShapesAreCheckedWithTheFlagNamed) {
  EXPECT_THROW(check_moe_bench_shape({0, 64, 64, 0, 1}), Error);
  EXPECT_THROW(check_moe_bench_shape({4, 64, 64, 0, 5}), Error);
  try {
    check_moe_bench_shape({4, 64, 40, 0, 2});
    FAIL() << "I = 40 is not a multiple of 16";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("--intermediate"), std::string::npos) << error.what();
  }
}

// The layer in FP64 from the peer's own FP32 experts, token by token.
std::vector<double> direct_moe(const MoeBenchLayer& layer, const std::vector<float>& x, const moe::TopK& routing) {
  const MoeBenchShape& shape = layer.shape();
  const std::int64_t hidden = shape.hidden;
  std::vector<double> out(std::size_t(routing.tokens * hidden), 0.0);
  const auto ffn = [&](const float* row, const std::vector<float>& gate_up, const std::vector<float>& down, std::int64_t width,
                       double scale, double* y) {
    std::vector<double> h(static_cast<std::size_t>(width));
    for (std::int64_t j = 0; j < width; ++j) {
      double gate = 0, up = 0;
      for (std::int64_t c = 0; c < hidden; ++c) {
        gate += double(row[c]) * gate_up[std::size_t(j * hidden + c)];
        up += double(row[c]) * gate_up[std::size_t((width + j) * hidden + c)];
      }
      h[std::size_t(j)] = gate / (1.0 + std::exp(-gate)) * up;
    }
    for (std::int64_t r = 0; r < hidden; ++r) {
      double sum = 0;
      for (std::int64_t j = 0; j < width; ++j) sum += h[std::size_t(j)] * down[std::size_t(r * width + j)];
      y[r] += scale * sum;
    }
  };
  for (std::int64_t t = 0; t < routing.tokens; ++t) {
    const float* row = x.data() + t * hidden;
    for (int i = 0; i < routing.k; ++i) {
      const std::int64_t e = routing.ids[std::size_t(t * routing.k + i)];
      ffn(row, layer.dequantized_gate_up(e), layer.dequantized_down(e), shape.intermediate,
          routing.weights[std::size_t(t * routing.k + i)], out.data() + t * hidden);
    }
    double logit = 0;
    for (std::int64_t c = 0; c < hidden; ++c) logit += double(row[c]) * layer.shared_gate()[std::size_t(c)];
    ffn(row, layer.shared_gate_up()->dequantize(), layer.shared_down()->dequantize(), shape.shared_intermediate,
        1.0 / (1.0 + std::exp(-logit)), out.data() + t * hidden);
  }
  return out;
}

TEST(MoeBench, OpenblasPeerMatchesTheLayerEvaluatedDirectly) {
  const MoeBenchShape shape{6, 32, 16, 16, 2};  // 6 experts: more than the distinct ones, so slots repeat
  const MoeBenchLayer layer(shape);
  EXPECT_EQ(layer.weights().num_experts(), 6);
  ASSERT_TRUE(layer.weights().shared.has_value());
  const moe::TopK routing = uniform_random_routing(5, 6, 2, 9);
  const std::vector<float> x = random_normal_values(5 * 32, 3);
  std::vector<float> out(5 * 32, std::nanf(""));
  const OpenblasMoePeer peer(layer);
  peer({x.data(), DType::f32, 5, 32}, routing, {out.data(), DType::f32, 5, 32});
  const std::vector<double> expected = direct_moe(layer, x, routing);
  double scale = 0;
  for (double value : expected) scale = std::max(scale, std::abs(value));
  ASSERT_GT(scale, 0.0);
  for (std::size_t i = 0; i < out.size(); ++i) ASSERT_NEAR(out[i], expected[i], 1e-4 * scale) << "element " << i;
}

TEST(MoeBench, TimingRefusesACallThatLeavesTheOutputUnwritten) {
  const MoeBenchShape shape{4, 32, 16, 0, 2};
  const moe::TopK routing = uniform_random_routing(3, 4, 2, 1);
  const MoeResult silent = time_moe_call("silent", false, shape, {routing}, [](auto&&...) {}, DType::bf16, DType::bf16);
  EXPECT_FALSE(silent.ok);
  EXPECT_NE(silent.note.find("not finite"), std::string::npos) << silent.note;
  const std::vector<moe::TopK> draws = routing_draws(3, 4, 2, 1);
  ASSERT_EQ(draws.size(), std::size_t(kRoutingDraws));
  EXPECT_EQ(draws[0].ids, routing.ids) << "the first draw is the seed's";
  std::set<const std::int32_t*> seen;
  const MoeResult zeros = time_moe_call(
      "zeros", false, shape, draws,
      [&](const DenseView& x, const moe::TopK& given, const MutableDenseView& out) {
        EXPECT_EQ(x.dtype, DType::f32);
        seen.insert(given.ids.data());
        std::fill_n(static_cast<float*>(out.data), out.rows * out.cols, 0.0f);
      },
      DType::f32, DType::f32);
  EXPECT_TRUE(zeros.ok) << zeros.note;
  EXPECT_GT(zeros.repeats, kRoutingDraws);
  EXPECT_EQ(seen.size(), std::size_t(kRoutingDraws)) << "every draw is used in turn";
  EXPECT_GE(zeros.active_experts, 2);
  EXPECT_LE(zeros.active_experts, 4);
}

// The router rows: each draw's x is BF16-exact and its own, and its routing is the oracle's for
// the layer's router, with logits of about unit spread (so routing is spread over the experts).
TEST(MoeBench, RoutedDrawsPairEachXWithTheRoutingTheRouterGivesIt) {
  const MoeBenchShape shape{16, 64, 32, 0, 4};
  const MoeBenchLayer layer(shape);
  const moe::MoeWeights weights = layer.weights();
  ASSERT_EQ(weights.router.data, layer.router().data) << "the layer carries its router";
  EXPECT_EQ(weights.router.dtype, DType::bf16);
  EXPECT_EQ(weights.router.rows, 16);
  EXPECT_EQ(weights.router.cols, 64);
  const RoutedDraws draws = routed_draws(layer, 5, 9);
  ASSERT_EQ(draws.x.size(), std::size_t(kRoutingDraws));
  ASSERT_EQ(draws.routings.size(), std::size_t(kRoutingDraws));
  EXPECT_NE(draws.x[0], draws.x[1]) << "each draw has its own x";
  double spread = 0;
  for (int d = 0; d < kRoutingDraws; ++d) {
    const std::vector<float>& x = draws.x[std::size_t(d)];
    ASSERT_EQ(x.size(), 5u * 64);
    for (float value : x) ASSERT_EQ(value, bf16_to_float(float_to_bf16(value)));
    const std::vector<float> logits = moe::router_logits({x.data(), DType::f32, 5, 64}, layer.router());
    const moe::TopK expected = moe::route_from_logits(logits.data(), 5, 16, 4, shape.norm_topk_prob);
    EXPECT_EQ(draws.routings[std::size_t(d)].ids, expected.ids) << "draw " << d;
    EXPECT_EQ(draws.routings[std::size_t(d)].weights, expected.weights) << "draw " << d;
    for (float logit : logits) spread += double(logit) * double(logit);
  }
  spread = std::sqrt(spread / (kRoutingDraws * 5.0 * 16));
  EXPECT_GT(spread, 0.5);
  EXPECT_LT(spread, 2.0);
  EXPECT_GE(count_active_experts(draws.routings[0], 16), 4);
}

// With per-draw x, the call of routings[d] sees x[d]; a count that does not match is refused.
TEST(MoeBench, TimingGivesEachDrawItsOwnXWhenAsked) {
  const MoeBenchShape shape{4, 32, 16, 0, 2};
  const std::vector<moe::TopK> draws = routing_draws(3, 4, 2, 1);
  std::vector<std::vector<float>> xs;
  for (int d = 0; d < kRoutingDraws; ++d) xs.push_back(std::vector<float>(3 * 32, float(d + 1)));
  std::set<std::pair<float, const std::int32_t*>> seen;
  const MoeResult result = time_moe_call(
      "each x", false, shape, draws,
      [&](const DenseView& x, const moe::TopK& given, const MutableDenseView& out) {
        EXPECT_EQ(x.dtype, DType::bf16);
        seen.insert({bf16_to_float(static_cast<const std::uint16_t*>(x.data)[0]), given.ids.data()});
        std::fill_n(static_cast<float*>(out.data), out.rows * out.cols, 0.0f);
      },
      DType::bf16, DType::f32, &xs);
  EXPECT_TRUE(result.ok) << result.note;
  ASSERT_EQ(seen.size(), std::size_t(kRoutingDraws)) << "x and routing travel together";
  for (const auto& [value, ids] : seen) {
    const std::size_t d = std::size_t(value) - 1;
    ASSERT_LT(d, draws.size());
    EXPECT_EQ(ids, draws[d].ids.data()) << "x of draw " << d << " came with another draw's routing";
  }
  xs.pop_back();
  EXPECT_THROW(time_moe_call("short", false, shape, draws, [](auto&&...) {}, DType::bf16, DType::f32, &xs), Error);
}

TEST(ModelStepReport, TotalsPerKindAndPeersThatMissAPart) {
  const std::vector<StepPart> parts{
      {"attention", "qkv", 15, 10.0, {{"cublas_bf16", 20.0}}},
      {"MoE experts", "experts", 60, 50.0, {{"cublas_bf16", 150.0}, {"openblas_sgemm", 400.0}}},
  };
  const std::vector<StepTotal> totals = step_totals(parts);
  ASSERT_EQ(totals.size(), 3u);
  EXPECT_EQ(totals[0].who, "fp4gemm");
  EXPECT_DOUBLE_EQ(totals[0].step_us, 15 * 10.0 + 60 * 50.0);
  EXPECT_DOUBLE_EQ(totals[0].kind_us.at("attention"), 150.0);
  EXPECT_TRUE(totals[0].complete());
  EXPECT_EQ(totals[1].who, "cublas_bf16");
  EXPECT_DOUBLE_EQ(totals[1].step_us, 15 * 20.0 + 60 * 150.0);
  EXPECT_EQ(totals[2].who, "openblas_sgemm");
  EXPECT_FALSE(totals[2].complete());
  EXPECT_EQ(totals[2].missing, std::vector<std::string>{"qkv"});
  EXPECT_DOUBLE_EQ(tokens_per_second(3150.0, 8), 8 * 1e6 / 3150.0);
  EXPECT_EQ(rows_per_active_expert(1, 10, 10.0), 1);
  EXPECT_EQ(rows_per_active_expert(64, 10, expected_active_experts(64, 512, 10)), 2);
  EXPECT_DOUBLE_EQ(moe_from_expert_gemms(10, 3.0, 2.0), 50.0);
}

}  // namespace
}  // namespace fp4gemm::bench
