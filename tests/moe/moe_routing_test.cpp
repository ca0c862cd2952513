// The host routing steps: softmax + top-k (ties to the lower expert index), renormalisation,
// router logits in FP64, and the permutation that groups tokens by expert.
#include <gtest/gtest.h>

#include <cmath>

#include "fp4gemm/error.hpp"
#include "fp4gemm/moe/moe_routing.hpp"

namespace fp4gemm::moe {
namespace {

TEST(MoeRouting, TopKPicksTheLargestLogitsInDescendingOrderWithSoftmaxWeights) {
  const float logits[] = {0.5f, 2.0f, -1.0f, 1.0f};
  const TopK routing = route_from_logits(logits, 1, 4, 2, /*normalize=*/false);
  ASSERT_EQ(routing.ids.size(), 2u);
  EXPECT_EQ(routing.ids[0], 1);
  EXPECT_EQ(routing.ids[1], 3);
  double total = 0.0;
  for (float logit : logits) total += std::exp(double(logit));
  EXPECT_NEAR(routing.weights[0], std::exp(2.0) / total, 1e-7);
  EXPECT_NEAR(routing.weights[1], std::exp(1.0) / total, 1e-7);
}

TEST(MoeRouting, RenormalisedWeightsSumToOneAndKeepTheirRatio) {
  const float logits[] = {0.5f, 2.0f, -1.0f, 1.0f};
  const TopK routing = route_from_logits(logits, 1, 4, 2, /*normalize=*/true);
  EXPECT_NEAR(routing.weights[0] + routing.weights[1], 1.0, 1e-7);
  EXPECT_NEAR(routing.weights[0] / routing.weights[1], std::exp(1.0), 1e-5);
  EXPECT_NEAR(routing.weights[0], std::exp(2.0) / (std::exp(2.0) + std::exp(1.0)), 1e-7);
}

TEST(MoeRouting, TiesGoToTheLowerExpertIndex) {
  // Experts 1, 3 and 4 tie for the top; 0 and 2 tie below them.
  const float logits[] = {0.25f, 1.5f, 0.25f, 1.5f, 1.5f};
  const TopK two = route_from_logits(logits, 1, 5, 2, true);
  EXPECT_EQ(two.ids[0], 1);
  EXPECT_EQ(two.ids[1], 3);
  EXPECT_FLOAT_EQ(two.weights[0], 0.5f);
  const TopK four = route_from_logits(logits, 1, 5, 4, true);
  EXPECT_EQ(four.ids[2], 4);
  EXPECT_EQ(four.ids[3], 0);
  const float all_equal[] = {3.0f, 3.0f, 3.0f};
  const TopK every = route_from_logits(all_equal, 1, 3, 3, false);
  for (int slot = 0; slot < 3; ++slot) {
    EXPECT_EQ(every.ids[std::size_t(slot)], slot);
    EXPECT_NEAR(every.weights[std::size_t(slot)], 1.0 / 3.0, 1e-7);
  }
}

TEST(MoeRouting, EachTokenIsRoutedOnItsOwnRow) {
  const float logits[] = {1.0f, 0.0f, 0.0f,   // token 0 -> expert 0
                          0.0f, 0.0f, 5.0f};  // token 1 -> expert 2
  const TopK routing = route_from_logits(logits, 2, 3, 1, true);
  EXPECT_EQ(routing.ids[0], 0);
  EXPECT_EQ(routing.ids[1], 2);
  EXPECT_FLOAT_EQ(routing.weights[0], 1.0f);
  EXPECT_FLOAT_EQ(routing.weights[1], 1.0f);
}

TEST(MoeRouting, RejectsKOutsideOneToEAndNonFiniteLogits) {
  const float logits[] = {1.0f, 2.0f};
  EXPECT_THROW(route_from_logits(logits, 1, 2, 0, true), Error);
  EXPECT_THROW(route_from_logits(logits, 1, 2, 3, true), Error);
  const float overflowed[] = {INFINITY, 2.0f};
  EXPECT_THROW(route_from_logits(overflowed, 1, 2, 1, true), Error);
}

TEST(MoeRouting, RouterLogitsAccumulateInFp64AndRoundOnceToFp32) {
  // 1 + 2^-30 - 1: an FP32 accumulator loses the small term, FP64 keeps it.
  const float x[] = {1.0f, 0x1p-30f, -1.0f, 0.0f};
  const float router[] = {1.0f, 1.0f, 1.0f, 1.0f,    // expert 0: the sum
                          2.0f, 0.0f, 0.0f, 0.5f};   // expert 1: 2
  const std::vector<float> logits =
      router_logits({x, DType::f32, 1, 4, 0, Memory::host, 0}, {router, DType::f32, 2, 4, 0, Memory::host, 0});
  ASSERT_EQ(logits.size(), 2u);
  EXPECT_EQ(logits[0], 0x1p-30f);
  EXPECT_EQ(logits[1], 2.0f);
}

TEST(MoeRouting, PermutationGroupsTokensByExpertInAscendingTokenOrder) {
  TopK routing;
  routing.tokens = 3;
  routing.k = 2;
  routing.ids = {2, 0,   // token 0
                 0, 2,   // token 1
                 3, 0};  // token 2
  routing.weights.assign(6, 0.5f);
  const Permutation permutation = permute_by_expert(routing, 5);
  EXPECT_EQ(permutation.offsets, (std::vector<std::int64_t>{0, 3, 3, 5, 6, 6}));
  EXPECT_EQ(permutation.token, (std::vector<std::int32_t>{0, 1, 2, 0, 1, 2}));
  EXPECT_EQ(permutation.slot, (std::vector<std::int32_t>{1, 0, 1, 0, 1, 0}));
  EXPECT_EQ(permutation.active_experts(), 3);
}

TEST(MoeRouting, PermutationRejectsIdsOutOfRange) {
  TopK routing;
  routing.tokens = 1;
  routing.k = 1;
  routing.ids = {4};
  routing.weights = {1.0f};
  EXPECT_THROW(permute_by_expert(routing, 4), Error);
  routing.ids = {-1};
  EXPECT_THROW(permute_by_expert(routing, 4), Error);
}

}  // namespace
}  // namespace fp4gemm::moe
