// bench --moe's GPU peers on a small layer: each one's output, poisoned first, against ref on every
// token and several routing draws; then the whole GPU MoE bench on it (ours, both peers, checked and timed).
#include <gtest/gtest.h>

#include <cmath>

#include "backends/cuda_common/cuda_check.hpp"
#include "bench/gpu_support.hpp"
#include "bench/moe_gpu_bench.hpp"
#include "bench/moe_gpu_peers.hpp"
#include "fp4gemm/format/half.hpp"
#include "gpu/gpu_test_support.hpp"

namespace fp4gemm::bench {
namespace {

// 6 experts (more than the layer's distinct ones, so copies repeat), k = 2, H and I multiples of 16.
const MoeBenchShape kShape{6, 64, 32, 0, 2};
constexpr std::int64_t kTokens = 5;

// A correct BF16 peer differs from ref by BF16 roundings (gate_up, h, expert outputs); a correct
// FP8 one by E4M3 x, h and weights (moe_peer_plan.hpp's kGrossRelativeError says how much).
constexpr double kBf16Bound = 2e-2, kFp8Bound = 0.15;

std::vector<float> run_draw(GpuMoePeer& peer, GpuMoeOperands& operands, int draw, cudaStream_t stream) {
  cuda::check_cuda(cudaMemsetAsync(operands.out.data(), 0xFF, operands.out.bytes(), stream), "test: poisoning the output");
  peer.enqueue(draw, stream);
  cuda::check_cuda(cudaStreamSynchronize(stream), "test: the peer's call");
  std::vector<std::uint16_t> bits(operands.out.bytes() / 2);
  cuda::check_cuda(cudaMemcpy(bits.data(), operands.out.data(), operands.out.bytes(), cudaMemcpyDeviceToHost), "test: reading the output");
  std::vector<float> values;
  for (std::uint16_t value : bits) values.push_back(bf16_to_float(value));
  return values;
}

void expect_matches_ref(std::unique_ptr<GpuMoePeer> (*make)(const MoeBenchLayer&, GpuMoeOperands&), double bound) {
  const auto gpu = testing::first_gpu();
  if (!gpu) GTEST_SKIP() << cuda_unavailable_reason();
  cuda::DeviceGuard guard(gpu->index);
  const MoeBenchLayer layer(kShape);
  GpuMoeOperands operands = make_gpu_moe_operands(kShape, routing_draws(kTokens, kShape.experts, kShape.top_k, 7));
  Stream stream;
  const std::unique_ptr<GpuMoePeer> peer = make(layer, operands);
  peer->prepare(stream.get());
  std::vector<std::int64_t> all;
  for (std::int64_t t = 0; t < kTokens; ++t) all.push_back(t);
  for (int draw : {0, 3, kRoutingDraws - 1}) {
    const std::vector<float> out = run_draw(*peer, operands, draw, stream.get());
    for (float value : out) ASSERT_TRUE(std::isfinite(value)) << peer->name() << " left an output element unwritten (draw " << draw << ")";
    const std::vector<double> expected = reference_rows(layer.weights(), operands.x_values, kShape.hidden, operands.routings[std::size_t(draw)], all);
    const double error = relative_error(out, expected);
    EXPECT_LT(error, bound) << peer->name() << ", draw " << draw;
    EXPECT_GT(error, 0.0) << peer->name() << ": bit-exact against FP64 ref is not credible for a BF16/FP8 path";
  }
}

TEST(GpuMoePeers, CublasBf16GroupedMatchesRef) { expect_matches_ref(make_cublas_bf16_grouped_peer, kBf16Bound); }

TEST(GpuMoePeers, CublasLtFp8MatchesRef) { expect_matches_ref(make_cublaslt_fp8_peer, kFp8Bound); }

TEST(GpuMoePeers, TheBenchTimesOursAndBothPeersCheckedAgainstRef) {
  const auto gpu = testing::first_gpu();
  if (!gpu) GTEST_SKIP() << cuda_unavailable_reason();
  const MoeBenchLayer layer(kShape);
  const std::vector<MoeResult> results = bench_moe_gpu(layer, {gpu->index, {1, kTokens}, "", true, 11});
  ASSERT_EQ(results.size(), 8u) << "per token count: ours with given routing, ours routed by its router, two peers";
  for (const MoeResult& result : results) {
    EXPECT_TRUE(result.ok) << result.name << " T = " << result.tokens << ": " << result.note;
    EXPECT_GT(result.time_us, 0.0) << result.name;
    EXPECT_GT(result.checked_tokens, 0) << result.name;
    EXPECT_LE(result.relative_error, result.peer ? kFp8Bound : kBf16Bound) << result.name << ": " << result.note;
  }
  EXPECT_FALSE(results[0].peer);
  EXPECT_FALSE(results[0].routed);
  EXPECT_FALSE(results[1].peer);
  EXPECT_TRUE(results[1].routed);
  EXPECT_EQ(results[1].name, results[0].name) << "the same backend serves both";
  EXPECT_TRUE(results[2].name == "cublas_bf16_grouped" || results[2].name == "cublas_bf16_per_expert") << results[2].name;
  EXPECT_EQ(results[3].name, "cublaslt_fp8");
  const std::vector<MoeResult> given_only = bench_moe_gpu(layer, {gpu->index, {1}, "", false, 11, false});
  ASSERT_EQ(given_only.size(), 1u) << "no peers, no router row";
  EXPECT_FALSE(given_only[0].routed);
}

}  // namespace
}  // namespace fp4gemm::bench
