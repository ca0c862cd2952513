// Every MoE backend against the FP64 oracle on fresh random inputs, outputs poisoned before the
// call, every element checked: the shapes and routings the issue names, both layouts, both input
// types, every output type, the shared expert in each form, W4A4.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "backends/ref/ref_backend.hpp"
#include "fp4gemm/format/half.hpp"
#include "fp4gemm/format/scale_layout.hpp"
#include "fp4gemm/moe/moe_runner.hpp"
#include "moe/moe_test_support.hpp"
#include "support/test_support.hpp"

namespace fp4gemm::moe::testing {
namespace {

class EveryMoeBackend : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    for (const auto& candidate : make_all_moe_backends())
      if (candidate->name() == GetParam()) backend = candidate;
    ASSERT_TRUE(backend) << "no MoE backend named " << GetParam();
  }
  void expect_matches_reference(const MoeCase& c) {
    const std::string failures = run_and_compare(*backend, c);
    EXPECT_TRUE(failures.empty()) << failures;
  }
  std::shared_ptr<MoeBackend> backend;
};

MoeCase base_case() { return MoeCase{}; }

TEST_P(EveryMoeBackend, OneToken) {
  MoeCase c = base_case();
  c.tokens = 1;
  expect_matches_reference(c);
}

TEST_P(EveryMoeBackend, ExpertsThatGetNoToken) {
  MoeCase c = base_case();
  c.tokens = 2;
  c.layer.experts = 7;
  c.routing = Routing::given;
  expect_matches_reference(c);
}

TEST_P(EveryMoeBackend, EveryTokenOnOneExpert) {
  MoeCase c = base_case();
  c.tokens = 6;
  c.routing = Routing::given_one_expert;
  expect_matches_reference(c);
}

TEST_P(EveryMoeBackend, TopOneAndTopEveryExpert) {
  MoeCase c = base_case();
  c.top_k = 1;
  expect_matches_reference(c);
  c.top_k = int(c.layer.experts);
  expect_matches_reference(c);
  c.norm_topk_prob = false;
  expect_matches_reference(c);
}

TEST_P(EveryMoeBackend, ExpertCountsThatAreNotPowersOfTwo) {
  MoeCase c = base_case();
  for (std::int64_t experts : {3, 6, 11}) {
    c.layer.experts = experts;
    c.top_k = 3;
    expect_matches_reference(c);
  }
}

TEST_P(EveryMoeBackend, FusedGateUpLayout) {
  MoeCase c = base_case();
  c.layer.layout = ExpertLayout::fused_gate_up;
  expect_matches_reference(c);
  c.routing = Routing::given;
  c.input = DType::f32;
  expect_matches_reference(c);
}

TEST_P(EveryMoeBackend, SharedExpertNvfp4AndDense) {
  MoeCase c = base_case();
  c.layer.shared = SharedKind::nvfp4;
  expect_matches_reference(c);
  c.layer.shared = SharedKind::dense;
  expect_matches_reference(c);
  c.layer.dense_dtype = DType::f32;
  c.input = DType::f32;
  expect_matches_reference(c);
  c.layer.shared_gate = false;
  expect_matches_reference(c);
}

TEST_P(EveryMoeBackend, Fp32InputAndEveryOutputType) {
  for (DType input : {DType::bf16, DType::f32}) {
    for (DType output : {DType::bf16, DType::f16, DType::f32}) {
      MoeCase c = base_case();
      c.input = input;
      c.output = output;
      expect_matches_reference(c);
    }
  }
}

TEST_P(EveryMoeBackend, GivenRoutingIsUsedAsGiven) {
  MoeCase c = base_case();
  c.routing = Routing::given;
  c.norm_topk_prob = true;  // given weights are not renormalised
  expect_matches_reference(c);
}

TEST_P(EveryMoeBackend, W4A4) {
  MoeCase c = base_case();
  c.w4a4 = true;
  c.tokens = 5;
  expect_matches_reference(c);
  c.layer.shared = SharedKind::nvfp4;
  c.layer.layout = ExpertLayout::fused_gate_up;
  expect_matches_reference(c);
  c.layer.shared = SharedKind::dense;
  c.input = DType::f32;
  expect_matches_reference(c);
}

TEST_P(EveryMoeBackend, ManyTokensLargerLayer) {
  MoeCase c = base_case();
  c.tokens = 40;
  c.layer.experts = 9;
  c.layer.hidden = 256;
  c.layer.intermediate = 96;
  c.layer.shared = SharedKind::nvfp4;
  c.top_k = 3;
  expect_matches_reference(c);
}

// Hundreds of rows per expert: the cpu backend's fused batches split (at 512 gathered rows) and an
// expert with more rows than a batch runs alone, in both input types.
TEST_P(EveryMoeBackend, ExpertsWithHundredsOfRows) {
  for (DType input : {DType::bf16, DType::f32}) {
    MoeCase c = base_case();
    c.tokens = 520;
    c.layer.experts = 3;
    c.layer.hidden = 64;
    c.layer.intermediate = 32;
    c.top_k = 2;
    c.input = input;
    expect_matches_reference(c);
    c.routing = Routing::given_one_expert;
    expect_matches_reference(c);
  }
}

TEST_P(EveryMoeBackend, SwizzledBlockScales) {
  const std::uint64_t seed = fp4gemm::testing::fresh_seed();
  std::mt19937_64 rng(seed);
  MoeCase c = base_case();
  c.layer.shared = SharedKind::nvfp4;
  MoeInputs inputs = make_moe_inputs(c, rng);
  // Every NVFP4 view's scales in the 128x4 swizzled layout (as GPU-prepared tensors carry them).
  std::vector<std::vector<std::uint8_t>> swizzled;
  swizzled.reserve(3 * inputs.layer.weights.experts.size() + 3);
  const auto swizzle = [&](Nvfp4View& view) {
    swizzled.push_back(scale_layout::to_swizzled(view.scales, view.rows, view.cols));
    view.scales = swizzled.back().data();
    view.scale_layout = ScaleLayout::swizzled_128x4;
    view.scales_size_bytes = 0;
  };
  for (auto& expert : inputs.layer.weights.experts)
    for (Nvfp4View* view : {&expert.gate, &expert.up, &expert.down}) swizzle(*view);
  for (Nvfp4View* view : {&inputs.layer.weights.shared->nvfp4->gate, &inputs.layer.weights.shared->nvfp4->up,
                          &inputs.layer.weights.shared->nvfp4->down})
    swizzle(*view);
  const auto prepared = backend->prepare(inputs.layer.weights, probe_cpu());
  PoisonedMoeOutput out = make_poisoned_moe_output(c.tokens, c.layer.hidden, c.output);
  backend->run(inputs.call, *prepared, out.view, {});
  // The oracle reads the linear original, so a scale read from the wrong place shows.
  std::mt19937_64 replay(seed);
  const MoeInputs original = make_moe_inputs(c, replay);
  const std::string failures = compare_with_moe_reference(
      reference_moe(original.layer.weights, original.call, kAccumulationError), out.view.as_const());
  EXPECT_TRUE(failures.empty()) << "seed " << seed << "\n" << failures;
}

TEST_P(EveryMoeBackend, StridedInputAndOutput) {
  const std::uint64_t seed = fp4gemm::testing::fresh_seed();
  std::mt19937_64 rng(seed);
  MoeCase c = base_case();
  c.tokens = 5;
  c.w4a4 = true;
  c.layer.shared = SharedKind::nvfp4;
  const MoeInputs inputs = make_moe_inputs(c, rng);
  const std::int64_t hidden = c.layer.hidden, stride = hidden + 24;
  // x's rows with NaN padding between them: a backend reading past a row's end fails.
  std::vector<std::uint16_t> padded_x(static_cast<std::size_t>(c.tokens * stride), 0x7FC0);
  for (std::int64_t t = 0; t < c.tokens; ++t)
    std::copy_n(inputs.x.bf16.begin() + t * hidden, hidden, padded_x.begin() + t * stride);
  MoeCall call = inputs.call;
  call.x = {padded_x.data(), DType::bf16, c.tokens, hidden, stride, Memory::host, 0};
  std::vector<float> padded_out(static_cast<std::size_t>(c.tokens * stride), NAN);
  const MutableDenseView out{padded_out.data(), DType::f32, c.tokens, hidden, stride, Memory::host, 0};
  const auto prepared = backend->prepare(inputs.layer.weights, probe_cpu());
  backend->run(call, *prepared, out, {});
  const std::string failures = compare_with_moe_reference(
      reference_moe(inputs.layer.weights, inputs.call, kAccumulationError), out.as_const());
  EXPECT_TRUE(failures.empty()) << "seed " << seed << "\n" << failures;
  for (std::int64_t t = 0; t < c.tokens; ++t)
    for (std::int64_t col = hidden; col < stride; ++col)
      EXPECT_TRUE(std::isnan(padded_out[std::size_t(t * stride + col)])) << "wrote padding at " << t << ", " << col;
}

TEST_P(EveryMoeBackend, ZeroTokensWritesNothing) {
  std::mt19937_64 rng(fp4gemm::testing::fresh_seed());
  MoeCase c = base_case();
  c.tokens = 0;
  const MoeInputs inputs = make_moe_inputs(c, rng);
  const auto prepared = backend->prepare(inputs.layer.weights, probe_cpu());
  PoisonedMoeOutput out = make_poisoned_moe_output(0, c.layer.hidden, c.output);
  EXPECT_NO_THROW(backend->run(inputs.call, *prepared, out.view, {}));
}

INSTANTIATE_TEST_SUITE_P(MoeBackends, EveryMoeBackend, ::testing::ValuesIn(host_moe_backend_names()),
                         [](const auto& info) { return info.param; });

// The oracle itself, against the dense oracle: one expert, k = 1, FP32 x, so
// y = down · (SiLU(gate · x) ⊙ (up · x)) with h in FP32, from three dense reference GEMMs.
TEST(MoeReference, OneExpertIsThreeDenseGemms) {
  std::mt19937_64 rng(fp4gemm::testing::fresh_seed());
  MoeCase c = base_case();
  c.layer.experts = 1;
  c.top_k = 1;
  c.input = DType::f32;
  c.tokens = 4;
  const MoeInputs inputs = make_moe_inputs(c, rng);
  const ExpertProjections& expert = inputs.layer.weights.experts[0];
  const ActivationView x = ActivationView::from_dense(inputs.call.x);
  const ReferenceResult gate = reference_gemm(x, expert.gate, expert.gate.global_scale);
  const ReferenceResult up = reference_gemm(x, expert.up, expert.up.global_scale);
  const std::int64_t intermediate = expert.gate.rows, hidden = expert.down.rows;
  std::vector<float> h(gate.values.size());
  for (std::size_t i = 0; i < h.size(); ++i) h[i] = float(gate.values[i] / (1.0 + std::exp(-gate.values[i])) * up.values[i]);
  const ReferenceResult y = reference_gemm(ActivationView::from_dense({h.data(), DType::f32, c.tokens, intermediate}),
                                           expert.down, expert.down.global_scale);
  const MoeReference reference = reference_moe(inputs.layer.weights, inputs.call, kAccumulationError);
  ASSERT_EQ(reference.values.size(), std::size_t(c.tokens * hidden));
  for (std::size_t i = 0; i < y.values.size(); ++i) {
    // The routing weight of a single expert is exactly 1 after softmax and renormalisation.
    EXPECT_NEAR(reference.values[i], y.values[i], 1e-12 * y.absolute_sum[i] + 1e-30) << "element " << i;
  }
}

}  // namespace
}  // namespace fp4gemm::moe::testing
