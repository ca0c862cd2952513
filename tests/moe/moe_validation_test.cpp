// Bad MoE input is a clear Error before anything is written: every backend, every check.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "fp4gemm/error.hpp"
#include "fp4gemm/moe/moe_runner.hpp"
#include "moe/moe_test_support.hpp"
#include "support/test_support.hpp"

namespace fp4gemm::moe::testing {
namespace {

class MoeBadInput : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    for (auto& backend : make_all_moe_backends())
      if (backend->name() == GetParam()) backend_ = backend;
    ASSERT_TRUE(backend_);
    std::mt19937_64 rng(fp4gemm::testing::fresh_seed());
    c_.routing = Routing::given;
    given_ = make_moe_inputs(c_, rng);
    c_.routing = Routing::router;
    routed_ = make_moe_inputs(c_, rng);
    c_.layer.input_scales = false;
    no_scales_ = make_moe_inputs(c_, rng);
    c_.layer.input_scales = true;
  }

  // Runs `call` (changed by `change`) and expects an Error whose message holds `phrase`, with the
  // poisoned output untouched.
  void expect_rejected(const MoeInputs& inputs, const std::function<void(MoeCall&, MutableDenseView&)>& change,
                       const std::string& phrase) {
    const auto prepared = backend_->prepare(inputs.layer.weights, probe_cpu());
    PoisonedMoeOutput out = make_poisoned_moe_output(inputs.call.x.rows, c_.layer.hidden, DType::f32);
    MoeCall call = inputs.call;
    MutableDenseView view = out.view;
    change(call, view);
    try {
      backend_->run(call, *prepared, view, {});
      ADD_FAILURE() << "accepted; expected an error saying '" << phrase << "'";
    } catch (const Error& error) {
      EXPECT_EQ(error.code(), ErrorCode::invalid_argument);
      EXPECT_NE(std::string(error.what()).find(phrase), std::string::npos) << error.what();
    }
    EXPECT_TRUE(still_poisoned(out)) << "the output was written before the error: " << phrase;
  }

  void expect_weights_rejected(const std::function<void(MoeWeights&)>& change, const std::string& phrase) {
    MoeWeights weights = routed_.layer.weights;
    change(weights);
    try {
      backend_->prepare(weights, probe_cpu());
      ADD_FAILURE() << "accepted; expected an error saying '" << phrase << "'";
    } catch (const Error& error) {
      EXPECT_NE(std::string(error.what()).find(phrase), std::string::npos) << error.what();
    }
  }

  std::shared_ptr<MoeBackend> backend_;
  MoeCase c_;
  MoeInputs given_, routed_, no_scales_;
};

TEST_P(MoeBadInput, ShapesAndDtypesOfXAndOut) {
  expect_rejected(routed_, [](MoeCall& call, MutableDenseView&) { call.x.cols -= 16; }, "hidden size");
  expect_rejected(routed_, [](MoeCall&, MutableDenseView& out) { out.cols -= 1; }, "MoE output is");
  expect_rejected(routed_, [](MoeCall&, MutableDenseView& out) { out.rows += 1; }, "the buffer holds");
  expect_rejected(routed_, [](MoeCall&, MutableDenseView& out) {
    out.rows += 1;
    out.size_bytes = 0;  // unknown: the shape check speaks
  }, "MoE output is");
  expect_rejected(routed_, [](MoeCall& call, MutableDenseView&) { call.x.dtype = DType::f16; }, "f16 is not supported");
  expect_rejected(routed_, [](MoeCall& call, MutableDenseView&) { call.x.memory = Memory::cuda; }, "memory");
}

TEST_P(MoeBadInput, TopKOutOfRange) {
  expect_rejected(routed_, [](MoeCall& call, MutableDenseView&) { call.options.top_k = 0; }, "top_k = 0 is outside");
  expect_rejected(routed_, [this](MoeCall& call, MutableDenseView&) { call.options.top_k = int(c_.layer.experts) + 1; },
                  "is outside [1, 5]");
}

TEST_P(MoeBadInput, GivenRouting) {
  std::vector<std::int32_t> ids = given_.topk_ids;
  ids[ids.size() - 1] = std::int32_t(c_.layer.experts);
  expect_rejected(given_, [&](MoeCall& call, MutableDenseView&) { call.routing.topk_ids = ids.data(); }, "is outside [0, 5)");
  ids.back() = -1;
  expect_rejected(given_, [&](MoeCall& call, MutableDenseView&) { call.routing.topk_ids = ids.data(); }, "top-k id -1");
  std::vector<float> weights = given_.topk_weights;
  weights[1] = NAN;
  expect_rejected(given_, [&](MoeCall& call, MutableDenseView&) { call.routing.topk_weights = weights.data(); }, "not finite");
  expect_rejected(given_, [](MoeCall& call, MutableDenseView&) { call.routing.topk_weights = nullptr; }, "without top-k weights");
  expect_rejected(given_, [](MoeCall& call, MutableDenseView&) { call.routing.topk_ids = nullptr; }, "without top-k ids");
  expect_rejected(given_, [](MoeCall& call, MutableDenseView&) { call.routing = {}; }, "no router");
}

TEST_P(MoeBadInput, NonFiniteHiddenStates) {
  std::vector<float> x = routed_.x.f32;
  x[x.size() / 2] = INFINITY;
  for (DType dtype : {DType::f32, DType::bf16}) {
    std::vector<std::uint16_t> bits(x.size(), 0x7FC0);  // BF16 NaN everywhere
    expect_rejected(routed_, [&](MoeCall& call, MutableDenseView&) {
      call.x.dtype = dtype;
      call.x.data = dtype == DType::f32 ? static_cast<const void*>(x.data()) : bits.data();
    }, "non-finite value");
  }
}

TEST_P(MoeBadInput, W4A4WithoutInputScales) {
  expect_rejected(no_scales_, [](MoeCall& call, MutableDenseView&) { call.options.activation = ActivationType::nvfp4; },
                  "input_scale");
}

TEST_P(MoeBadInput, WeightsWithMissingOrMisshapenTensors) {
  expect_weights_rejected([](MoeWeights& w) { w.experts.clear(); }, "no experts");
  expect_weights_rejected([](MoeWeights& w) { w.experts[2].up.codes = nullptr; }, "expert 2 up_proj");
  expect_weights_rejected([](MoeWeights& w) { w.experts[1].down.rows -= 16; }, "expert 1 down_proj is");
  expect_weights_rejected([](MoeWeights& w) { w.experts[3].gate.cols -= 16; }, "expert 3 gate_proj is");
  expect_weights_rejected([](MoeWeights& w) { w.router.rows += 1; }, "router (gate.weight) is");
  expect_weights_rejected([](MoeWeights& w) { w.experts[0].down_input_scale = NAN; }, "input_scale must be finite");
  expect_weights_rejected([](MoeWeights& w) {
    w.shared = SharedExpert{};
    w.shared->dense_gate = w.router;
  }, "shared expert");
}

INSTANTIATE_TEST_SUITE_P(MoeBackends, MoeBadInput, ::testing::ValuesIn(host_moe_backend_names()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace fp4gemm::moe::testing
