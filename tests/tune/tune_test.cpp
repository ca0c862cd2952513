// The tuner's decisions: the fastest of our backends wins (never a peer, a floor or a failed row),
// the runner-up and the fastest peer are kept for the report, and the profile merges consecutive
// Ms with one winner into one entry that the runner's lookup then serves exactly as measured.
#include <gtest/gtest.h>

#include "tune/tune.hpp"

namespace fp4gemm::tune {
namespace {

bench::Result timed(const std::string& backend, std::int64_t m, double us, bool peer = false, std::int64_t n = 4096,
                    std::int64_t k = 4096, ActivationType activation = ActivationType::bf16) {
  bench::Result result;
  result.backend = backend;
  result.peer = peer;
  result.problem = {m, n, k, activation, DType::bf16};
  result.time_us = us;
  return result;
}

TEST(TuneChoice, FastestOfOurBackendsWinsWithRunnerUpAndPeer) {
  std::vector<bench::Result> results = {timed("cuda_dequant_cublas", 1, 13.0), timed("cuda_nvfp4", 1, 4.7),
                                        timed("cublas_bf16", 1, 2.0, /*peer=*/true), timed("cublaslt_fp8", 1, 7.4, true)};
  bench::Result floor = timed("stream_floor", 1, 1.0, true);
  floor.floor = true;
  results.push_back(floor);
  bench::Result failed = timed("cpu", 1, 0.5);
  failed.ok = false;
  results.push_back(failed);

  const std::vector<Choice> choices = choose_fastest(results);
  ASSERT_EQ(choices.size(), 1u);
  EXPECT_EQ(choices[0].backend, "cuda_nvfp4") << "a peer, the floor and a failed row never win";
  EXPECT_DOUBLE_EQ(choices[0].time_us, 4.7);
  EXPECT_EQ(choices[0].runner_up, "cuda_dequant_cublas");
  EXPECT_DOUBLE_EQ(choices[0].runner_up_us, 13.0);
  EXPECT_EQ(choices[0].fastest_peer, "cublas_bf16");
  EXPECT_DOUBLE_EQ(choices[0].fastest_peer_us, 2.0);
}

TEST(TuneChoice, ADenseCopyBackendIsComparedLikeAPeerNeverChosen) {
  bench::Result copy = timed("cuda_bf16_copy", 512, 20.0);
  copy.dense_copy = true;
  const std::vector<Choice> choices = choose_fastest({timed("cuda_dequant_cublas", 512, 30.0), copy});
  ASSERT_EQ(choices.size(), 1u);
  EXPECT_EQ(choices[0].backend, "cuda_dequant_cublas");
  EXPECT_EQ(choices[0].fastest_peer, "cuda_bf16_copy");
}

TEST(TuneChoice, RunnerUpIsKeptWhicheverOrderTheRowsCome) {
  const std::vector<Choice> choices =
      choose_fastest({timed("a", 8, 3.0), timed("b", 8, 1.0), timed("c", 8, 2.0), timed("d", 8, 4.0)});
  ASSERT_EQ(choices.size(), 1u);
  EXPECT_EQ(choices[0].backend, "b");
  EXPECT_EQ(choices[0].runner_up, "c");
}

TEST(TuneChoice, ProblemsWithOnlyPeersOrFailuresHaveNoChoice) {
  bench::Result failed = timed("cuda_nvfp4", 128, 1.0);
  failed.ok = false;
  EXPECT_TRUE(choose_fastest({timed("cublas_bf16", 64, 1.0, true), failed}).empty());
}

TEST(TuneProfile, ConsecutiveMsWithOneWinnerBecomeOneEntry) {
  std::vector<Choice> choices;
  const auto add = [&](std::int64_t m, const std::string& backend, std::int64_t n = 4096) {
    choices.push_back(Choice{{m, n, 4096, ActivationType::bf16, DType::bf16}, backend, 1.0, "", 0, "", 0});
  };
  // Out of order on purpose; 4096x4096: decode to 32, dequant at 64 and 128, decode again at 256.
  add(64, "cuda_dequant_cublas");
  add(1, "cuda_nvfp4");
  add(16, "cuda_nvfp4");
  add(32, "cuda_nvfp4");
  add(128, "cuda_dequant_cublas");
  add(256, "cuda_nvfp4");
  add(1, "cpu", 512);
  const dispatch::TunedProfile profile = make_profile(choices, {"NVIDIA H200", "13.0", "0.1.0"});

  ASSERT_EQ(profile.entries.size(), 4u);
  const auto expect_entry = [&](std::size_t i, std::int64_t m_max, std::int64_t n, const std::string& backend) {
    EXPECT_EQ(profile.entries[i].m_max, m_max) << i;
    EXPECT_EQ(profile.entries[i].n, n) << i;
    EXPECT_EQ(profile.entries[i].backend, backend) << i;
  };
  expect_entry(0, 1, 512, "cpu");
  expect_entry(1, 32, 4096, "cuda_nvfp4");
  expect_entry(2, 128, 4096, "cuda_dequant_cublas");
  expect_entry(3, 256, 4096, "cuda_nvfp4");

  // The runner's lookup serves each measured M with its winner, an M between two with the next
  // larger one's, and none past the largest.
  const auto lookup = [&](std::int64_t m) {
    const dispatch::ProfileEntry* entry = profile.find({m, 4096, 4096, ActivationType::bf16, DType::bf16});
    return entry ? entry->backend : std::string("(auto)");
  };
  EXPECT_EQ(lookup(1), "cuda_nvfp4");
  EXPECT_EQ(lookup(20), "cuda_nvfp4");
  EXPECT_EQ(lookup(33), "cuda_dequant_cublas");
  EXPECT_EQ(lookup(128), "cuda_dequant_cublas");
  EXPECT_EQ(lookup(200), "cuda_nvfp4");
  EXPECT_EQ(lookup(257), "(auto)");
  EXPECT_EQ(profile.find({1, 4096, 4096, ActivationType::nvfp4, DType::bf16}), nullptr) << "W4A4 was not tuned";

  // What is written reads back the same.
  const dispatch::TunedProfile again = dispatch::TunedProfile::parse(profile.to_json(), "<test>");
  EXPECT_EQ(again.metadata, profile.metadata);
  ASSERT_EQ(again.entries.size(), profile.entries.size());
  for (std::size_t i = 0; i < again.entries.size(); ++i) {
    EXPECT_EQ(again.entries[i].m_max, profile.entries[i].m_max);
    EXPECT_EQ(again.entries[i].backend, profile.entries[i].backend);
  }
}

TEST(TuneProfile, ActivationTypesAreTunedApart) {
  std::vector<Choice> choices;
  choices.push_back(Choice{{16, 4096, 4096, ActivationType::bf16, DType::bf16}, "cuda_nvfp4", 1, "", 0, "", 0});
  choices.push_back(Choice{{16, 4096, 4096, ActivationType::nvfp4, DType::bf16}, "cublaslt", 1, "", 0, "", 0});
  const dispatch::TunedProfile profile = make_profile(choices, {"cpu", "none", "0.1.0"});
  ASSERT_EQ(profile.entries.size(), 2u);
  EXPECT_EQ(profile.find({16, 4096, 4096, ActivationType::nvfp4, DType::bf16})->backend, "cublaslt");
  EXPECT_EQ(profile.find({16, 4096, 4096, ActivationType::bf16, DType::bf16})->backend, "cuda_nvfp4");
}

}  // namespace
}  // namespace fp4gemm::tune
