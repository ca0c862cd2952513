// The host side of bench --moe's GPU peers and report: a routing's per-expert GEMM plan, touched
// experts, the tokens checked against ref and the error that flags a wrong peer, the roofline
// arithmetic and the --json line.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "bench/moe_bench.hpp"
#include "bench/moe_peer_plan.hpp"
#include "bench/moe_report.hpp"
#include "fp4gemm/error.hpp"
#include "fp4gemm/format/half.hpp"
#include "moe/moe_reference.hpp"

namespace fp4gemm::bench {
namespace {

moe::TopK hand_routing() {
  // T = 3, k = 2, E = 4: token 0 -> experts 2, 0; token 1 -> 2, 3; token 2 -> 0, 2.
  return {3, 2, {2, 0, 2, 3, 0, 2}, {0.75f, 0.25f, 0.5f, 0.5f, 0.125f, 0.875f}};
}

TEST(MoePeerPlan, GroupsTokensByExpertAndCombinesEachChoiceFromItsRow) {
  const MoePeerPlan plan = plan_moe_peer(hand_routing(), 4);
  EXPECT_EQ(plan.experts, (std::vector<std::int32_t>{0, 2, 3})) << "expert 1 is idle";
  EXPECT_EQ(plan.rows, (std::vector<std::int64_t>{2, 3, 1}));
  EXPECT_EQ(plan.first_row, (std::vector<std::int64_t>{0, 2, 5}));
  EXPECT_EQ(plan.gather, (std::vector<std::int32_t>{0, 2, 0, 1, 2, 1})) << "ascending tokens within an expert";
  EXPECT_EQ(plan.combine_rows, (std::vector<std::int32_t>{2, 0, 3, 5, 1, 4}));
  EXPECT_EQ(plan.combine_weights, hand_routing().weights);
  for (std::size_t entry = 0; entry < plan.combine_rows.size(); ++entry)
    EXPECT_EQ(plan.gather[std::size_t(plan.combine_rows[entry])], std::int32_t(entry / 2)) << "entry " << entry << " reads its own token";
}

TEST(MoePeerPlan, CountsTokensPerExpertAndTheExpertsAnyDrawTouches) {
  EXPECT_EQ(expert_token_counts(hand_routing(), 4), (std::vector<std::int64_t>{2, 0, 3, 1}));
  moe::TopK bad = hand_routing();
  bad.ids[3] = 4;
  EXPECT_THROW(expert_token_counts(bad, 4), Error);
  const moe::TopK other{1, 2, {1, 3}, {0.5f, 0.5f}};
  EXPECT_EQ(touched_experts({hand_routing()}, 4), (std::vector<std::int32_t>{0, 2, 3}));
  EXPECT_EQ(touched_experts({hand_routing(), other}, 4), (std::vector<std::int32_t>{0, 1, 2, 3}));
  const std::vector<moe::TopK> draws = routing_draws(1, 512, 10, 2026);
  std::int64_t summed = 0;
  for (const moe::TopK& draw : draws) summed += count_active_experts(draw, 512);
  EXPECT_LE(std::int64_t(touched_experts(draws, 512).size()), summed);
  EXPECT_GE(std::int64_t(touched_experts(draws, 512).size()), 10);
}

TEST(MoePeerPlan, CheckedTokensSpreadFromFirstToLast) {
  EXPECT_EQ(check_tokens(3, 4), (std::vector<std::int64_t>{0, 1, 2}));
  EXPECT_EQ(check_tokens(4096, 4), (std::vector<std::int64_t>{0, 1365, 2730, 4095}));
  EXPECT_EQ(check_tokens(5, 4), (std::vector<std::int64_t>{0, 1, 2, 4}));
  EXPECT_EQ(check_tokens(10, 1), (std::vector<std::int64_t>{0}));
}

TEST(MoePeerPlan, RelativeErrorIsL2AndNeverPassesNaN) {
  EXPECT_EQ(relative_error({1.0f, 2.0f}, {1.0, 2.0}), 0.0);
  EXPECT_NEAR(relative_error({3.0f, 0.0f}, {0.0, 4.0}), 5.0 / 4.0, 1e-12);
  EXPECT_TRUE(std::isinf(relative_error({std::nanf(""), 1.0f}, {1.0, 1.0})));
  EXPECT_THROW(relative_error({1.0f}, {1.0, 2.0}), Error);
  EXPECT_EQ(describe_check(0.01, 4).find("GROSS"), std::string::npos);
  EXPECT_NE(describe_check(0.9, 4).find("GROSS"), std::string::npos);
  EXPECT_NE(describe_check(std::numeric_limits<double>::infinity(), 1).find("GROSS"), std::string::npos);
}

// ref on a subset of tokens equals ref on all of them, and the gross-error bound separates a
// correct implementation (the OpenBLAS peer) from one that drops the routing weights.
TEST(MoePeerPlan, ReferenceRowsMatchTheWholeCallAndTheBoundFlagsAWrongPeer) {
  const MoeBenchShape shape{6, 32, 16, 0, 2};
  const MoeBenchLayer layer(shape);
  const moe::MoeWeights weights = layer.weights();
  const moe::TopK routing = uniform_random_routing(5, 6, 2, 9);
  std::vector<float> x = random_normal_values(5 * 32, 3);
  for (float& value : x) value = bf16_to_float(float_to_bf16(value));
  const std::vector<std::int64_t> indices{1, 4};
  const std::vector<double> rows = reference_rows(weights, x, 32, routing, indices);
  std::vector<std::uint16_t> x_bf16;
  for (float value : x) x_bf16.push_back(float_to_bf16(value));
  moe::MoeCall whole;
  whole.x = {x_bf16.data(), DType::bf16, 5, 32};
  whole.routing = {routing.ids.data(), routing.weights.data()};
  whole.options.top_k = 2;
  const moe::MoeReference reference = moe::reference_moe(weights, whole, 0.0);
  ASSERT_EQ(rows.size(), 2u * 32u);
  for (std::size_t i = 0; i < 2; ++i)
    for (std::size_t c = 0; c < 32; ++c)
      EXPECT_DOUBLE_EQ(rows[i * 32 + c], reference.values[std::size_t(indices[i]) * 32 + c]) << "token " << indices[i] << " column " << c;

  const OpenblasMoePeer peer(layer);
  const auto peer_rows = [&](const moe::TopK& used) {
    std::vector<float> out(5 * 32, std::nanf(""));
    peer({x.data(), DType::f32, 5, 32}, used, {out.data(), DType::f32, 5, 32});
    std::vector<float> picked;
    for (std::int64_t token : indices) picked.insert(picked.end(), out.begin() + token * 32, out.begin() + (token + 1) * 32);
    return picked;
  };
  EXPECT_LT(relative_error(peer_rows(routing), rows), 1e-2) << "FP32 h against ref's BF16 h";
  moe::TopK unweighted = routing;
  for (float& weight : unweighted.weights) weight = 1.0f;
  EXPECT_GT(relative_error(peer_rows(unweighted), rows), kGrossRelativeError) << "dropping the routing weights is gross";
}

TEST(MoeReport, RooflineIsTheLargerOfTouchedBytesAndFlops) {
  const MoeBenchShape shape{512, 4096, 1024, 0, 10};
  const double expert = 3.0 * 4096 * 1024 * 0.5625;
  EXPECT_DOUBLE_EQ(moe_touched_bytes(shape, 1, 10), 10 * expert + 2 * 4096 * 2);
  EXPECT_DOUBLE_EQ(moe_touched_bytes(shape, 8, 79), 79 * expert + 2 * 8 * 4096 * 2);
  EXPECT_DOUBLE_EQ(moe_layer_flops(shape, 4), 2.0 * 4 * 10 * 3 * 4096 * 1024);
  Ceilings ceilings;
  EXPECT_EQ(moe_roofline_us(shape, 1, 10, ceilings), 0.0) << "no ceilings, no roofline";
  ceilings.bandwidth_gbps = 4000;
  ceilings.compute_tflops = 800;
  EXPECT_NEAR(moe_roofline_us(shape, 1, 10, ceilings), (10 * expert + 16384) / 4e12 * 1e6, 1e-9) << "T = 1 is bandwidth-bound";
  EXPECT_NEAR(moe_roofline_us(shape, 4096, 512, ceilings), 2.0 * 4096 * 10 * 3 * 4096 * 1024 / 8e14 * 1e6, 1e-6)
      << "T = 4096 is compute-bound";
  // A routed call (the layer's router ran) also reads the FP32 router once and computes the logits.
  EXPECT_DOUBLE_EQ(moe_touched_bytes(shape, 1, 10, true), moe_touched_bytes(shape, 1, 10) + 512.0 * 4096 * 4);
  EXPECT_DOUBLE_EQ(moe_layer_flops(shape, 4, true), moe_layer_flops(shape, 4) + 2.0 * 4 * 512 * 4096);
  EXPECT_NEAR(moe_roofline_us(shape, 1, 10, ceilings, true), moe_touched_bytes(shape, 1, 10, true) / 4e12 * 1e6, 1e-9);
}

TEST(MoeReport, JsonLineHoldsRooflineRatiosAndTheCheck) {
  const MoeBenchShape shape{512, 4096, 1024, 0, 10};
  Ceilings ceilings;
  ceilings.bandwidth_gbps = 4000;
  ceilings.compute_tflops = 800;
  MoeResult ours{"cuda_moe", false, 1, 10, 20.0};
  ours.relative_error = 0.002;
  ours.checked_tokens = 1;
  ours.kernel = "given routing; gate_up over all active experts in one launch";
  MoeResult bf16{"cublas_bf16_grouped", true, 1, 10, 120.0};
  MoeResult fp8{"cublaslt_fp8", true, 1, 10, 70.0};
  MoeResult wrong{"broken", true, 1, 10, 5.0};
  wrong.ok = false;
  wrong.relative_error = std::numeric_limits<double>::infinity();
  wrong.checked_tokens = 1;
  MoeResult other_tokens{"cublaslt_fp8", true, 8, 79, 300.0};
  const std::vector<MoeResult> results{ours, bf16, fp8, wrong, other_tokens};

  const nlohmann::json line = moe_json_line(shape, ours, results, ceilings, "cuda:0: test");
  EXPECT_EQ(line["moe"], true);
  EXPECT_EQ(line["backend"], "cuda_moe");
  EXPECT_EQ(line["tokens"], 1);
  EXPECT_EQ(line["active_experts"], 10);
  EXPECT_DOUBLE_EQ(line["touched_bytes"].get<double>(), moe_touched_bytes(shape, 1, 10));
  EXPECT_DOUBLE_EQ(line["bandwidth_gbps"].get<double>(), 4000);
  EXPECT_DOUBLE_EQ(line["compute_tflops"].get<double>(), 800);
  const double roofline = moe_roofline_us(shape, 1, 10, ceilings);
  EXPECT_DOUBLE_EQ(line["roofline_us"].get<double>(), roofline);
  EXPECT_DOUBLE_EQ(line["times_roofline"].get<double>(), 20.0 / roofline);
  EXPECT_DOUBLE_EQ(line["roofline_fraction"].get<double>(), roofline / 20.0);
  EXPECT_DOUBLE_EQ(line["relative_error"].get<double>(), 0.002);
  EXPECT_EQ(line["checked_tokens"], 1);
  EXPECT_EQ(line["kernel"], "given routing; gate_up over all active experts in one launch");
  ASSERT_TRUE(line.contains("speedup_over"));
  EXPECT_EQ(line["speedup_over"].size(), 2u) << "only ok peers of the same token count: " << line.dump();
  EXPECT_DOUBLE_EQ(line["speedup_over"]["cublas_bf16_grouped"].get<double>(), 6.0);
  EXPECT_DOUBLE_EQ(line["speedup_over"]["cublaslt_fp8"].get<double>(), 3.5);

  const nlohmann::json peer = moe_json_line(shape, bf16, results, ceilings, "cuda:0: test");
  EXPECT_EQ(peer["peer"], true);
  EXPECT_FALSE(peer.contains("speedup_over"));
  EXPECT_FALSE(peer.contains("relative_error")) << "not checked";
  EXPECT_FALSE(peer.contains("kernel")) << "a peer has no plan";
  EXPECT_EQ(line["routing"], "given");
  MoeResult routed = ours;
  routed.routed = true;
  routed.time_us = 25.0;
  const nlohmann::json whole = moe_json_line(shape, routed, results, ceilings, "cuda:0: test");
  EXPECT_EQ(whole["routing"], "router");
  EXPECT_DOUBLE_EQ(whole["touched_bytes"].get<double>(), moe_touched_bytes(shape, 1, 10, true));
  EXPECT_DOUBLE_EQ(whole["roofline_us"].get<double>(), moe_roofline_us(shape, 1, 10, ceilings, true));
  EXPECT_DOUBLE_EQ(whole["speedup_over"]["cublas_bf16_grouped"].get<double>(), 120.0 / 25.0);
  const nlohmann::json failed = moe_json_line(shape, wrong, results, ceilings, "cuda:0: test");
  EXPECT_EQ(failed["ok"], false);
  EXPECT_FALSE(failed.contains("time_us"));
  EXPECT_TRUE(failed["relative_error"].is_null()) << "an infinite error is null in JSON";
}

}  // namespace
}  // namespace fp4gemm::bench
