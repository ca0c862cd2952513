// Tuned profiles for MoE layers: the "moe" entries' lookup and round trip, precedence
// (argument > FP4GEMM_MOE_BACKEND > profile > auto), and how explain reports a hit, a miss and an
// invalid profile. The profile names `ref` where auto would take `cpu`, so following it shows.
#include <gtest/gtest.h>

#include <fstream>

#include "fp4gemm/dispatch/profile.hpp"
#include "fp4gemm/moe/moe_runner.hpp"
#include "moe/moe_test_support.hpp"
#include "support/test_support.hpp"

namespace fp4gemm::moe::testing {
namespace {

using dispatch::TunedProfile;

// E=5 k=2 H=64 I=32 bf16 (MoeCase's layer) up to 8 tokens -> ref; the cpu entry is for another E.
std::string profile_json(const std::string& gpu) {
  return std::string(R"({
  "metadata": {"gpu": ")") + gpu + R"(", "cuda": "none", "fp4gemm": ")" + dispatch::kLibraryVersion + R"("},
  "entries": [{"m_max": 64, "n": 4096, "k": 4096, "activation": "bf16", "backend": "cpu"}],
  "moe": [
    {"tokens_max": 8, "experts": 5, "top_k": 2, "hidden": 64, "intermediate": 32, "activation": "bf16", "backend": "ref"},
    {"tokens_max": 64, "experts": 6, "top_k": 2, "hidden": 64, "intermediate": 32, "activation": "bf16", "backend": "cpu"}
  ]
})";
}

std::string write_file(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + name;
  std::ofstream(path) << text;
  return path;
}

class MoeProfileTest : public ::testing::Test {
 protected:
  MoeRunnerOptions options(const std::string& profile_path, const std::string& backend = "",
                           const std::string& environment_value = "") {
    MoeRunnerOptions result;
    result.backend = backend;
    result.device = RunnerOptions::kCpuOnly;
    result.profile_path = profile_path;
    result.environment = [environment_value](const std::string& name) -> std::optional<std::string> {
      if (name == "FP4GEMM_MOE_BACKEND" && !environment_value.empty()) return environment_value;
      return std::nullopt;
    };
    result.log = [this](dispatch::LogLevel, const std::string& message) { warnings.push_back(message); };
    return result;
  }

  static MoeProblem problem(std::int64_t tokens, std::int64_t experts = 5) {
    MoeProblem p;
    p.tokens = tokens;
    p.hidden = 64;
    p.intermediate = 32;
    p.experts = experts;
    p.top_k = 2;
    return p;
  }

  std::vector<std::string> warnings;
};

TEST(MoeTunedProfile, FindsTheSmallestCoveringTokenRangeAndRoundTrips) {
  TunedProfile profile = TunedProfile::parse(profile_json("cpu"), "<test>");
  profile.moe_entries.push_back({2, {5, 2, 64, 32, ActivationType::bf16}, "cpu"});
  const dispatch::MoeProfileShape shape{5, 2, 64, 32, ActivationType::bf16};
  const auto backend_for = [&](const TunedProfile& p, const dispatch::MoeProfileShape& s, std::int64_t tokens) {
    const auto* entry = p.find_moe(s, tokens);
    return entry ? entry->backend : std::string("<none>");
  };
  EXPECT_EQ(backend_for(profile, shape, 2), "cpu");
  EXPECT_EQ(backend_for(profile, shape, 3), "ref");
  EXPECT_EQ(backend_for(profile, shape, 8), "ref");
  EXPECT_EQ(backend_for(profile, shape, 9), "<none>");
  EXPECT_EQ(backend_for(profile, {5, 2, 64, 32, ActivationType::nvfp4}, 1), "<none>");
  EXPECT_EQ(backend_for(profile, {5, 3, 64, 32, ActivationType::bf16}, 1), "<none>");

  const TunedProfile again = TunedProfile::parse(profile.to_json(), "<again>");
  ASSERT_EQ(again.moe_entries.size(), 3u);
  ASSERT_EQ(again.entries.size(), 1u);
  EXPECT_EQ(backend_for(again, shape, 2), "cpu");
  EXPECT_EQ(backend_for(again, shape, 5), "ref");
  EXPECT_EQ(again.moe_entries[1].shape.experts, 6);
}

TEST(MoeTunedProfile, AGemmOnlyProfileLoadsAndWritesNoMoeArray) {
  const TunedProfile profile = TunedProfile::parse(R"({
    "metadata": {"gpu": "cpu", "cuda": "none", "fp4gemm": "0.1.0"},
    "entries": [{"m_max": 64, "n": 4096, "k": 4096, "activation": "bf16", "backend": "cpu"}]})",
                                                   "<old>");
  EXPECT_EQ(profile.entries.size(), 1u);
  EXPECT_TRUE(profile.moe_entries.empty());
  EXPECT_EQ(profile.to_json().find("\"moe\""), std::string::npos);
}

TEST(MoeTunedProfile, ABadMoeEntryIsAnIoErrorThatNamesIt) {
  const std::string bad = R"({"metadata": {"gpu": "cpu", "cuda": "none", "fp4gemm": "0.1.0"}, "entries": [],
    "moe": [{"tokens_max": 0, "experts": 5, "top_k": 2, "hidden": 64, "intermediate": 32, "activation": "bf16", "backend": "ref"}]})";
  try {
    TunedProfile::parse(bad, "bad.json");
    FAIL() << "a non-positive tokens_max was accepted";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::io);
    EXPECT_NE(std::string(error.what()).find("tuned profile 'bad.json' moe entry 0"), std::string::npos) << error.what();
  }
}

TEST_F(MoeProfileTest, PrecedenceIsArgumentThenEnvironmentThenProfileThenAuto) {
  const std::string path = write_file("moe_profile_precedence.json", profile_json("cpu"));
  // Auto alone takes cpu; the profile's entry takes ref.
  EXPECT_EQ(MoeRunner(options("")).explain(problem(3)).choice, "cpu");
  const MoeExplanation from_profile = MoeRunner(options(path)).explain(problem(3));
  EXPECT_EQ(from_profile.choice, "ref");
  EXPECT_EQ(from_profile.candidates.front().origin, "profile");
  EXPECT_EQ(from_profile.choice_reason, "the tuned profile's moe entry for this layer");
  // The environment beats the profile, the argument beats both; neither consults it.
  const MoeExplanation from_environment = MoeRunner(options(path, "", "cpu")).explain(problem(3));
  EXPECT_EQ(from_environment.choice, "cpu");
  EXPECT_FALSE(from_environment.profile.hit);
  EXPECT_EQ(from_environment.profile.detail, "not consulted: the backend was chosen explicitly");
  EXPECT_EQ(MoeRunner(options(path, "ref", "cpu")).explain(problem(3)).choice, "ref");
  EXPECT_EQ(MoeRunner(options(path, "cpu", "ref")).explain(problem(3)).choice, "cpu");
}

TEST_F(MoeProfileTest, ExplainReportsAHitAndAMissInTheDenseWords) {
  const std::string path = write_file("moe_profile_explain.json", profile_json("cpu"));
  MoeRunner runner(options(path));
  const MoeExplanation hit = runner.explain(problem(3));
  EXPECT_TRUE(hit.profile.loaded && hit.profile.valid && hit.profile.hit);
  EXPECT_EQ(hit.profile.backend, "ref");
  const std::string hit_text = hit.to_text();
  EXPECT_NE(hit_text.find("profile:  hit: tuned profile '" + path + "' moe entry tokens_max=8 picks 'ref'"),
            std::string::npos) << hit_text;

  // More tokens than any entry of this shape covers: a miss, and auto's cpu.
  const MoeExplanation miss = runner.explain(problem(9));
  EXPECT_TRUE(miss.profile.valid);
  EXPECT_FALSE(miss.profile.hit);
  EXPECT_EQ(miss.choice, "cpu");
  EXPECT_NE(miss.to_text().find("profile:  miss: tuned profile '" + path +
                                "' has no moe entry for E=5 k=2 H=64 I=32 a=bf16 with tokens_max >= 9"),
            std::string::npos) << miss.to_text();
  // Another shape (E=6) has its own entry.
  EXPECT_EQ(runner.explain(problem(9, 6)).profile.backend, "cpu");
}

TEST_F(MoeProfileTest, AProfileFromAnotherDeviceIsIgnoredWithTheReason) {
  const std::string path = write_file("moe_profile_other_gpu.json", profile_json("NVIDIA H200"));
  MoeRunner runner(options(path));
  const MoeExplanation explanation = runner.explain(problem(3));
  EXPECT_TRUE(explanation.profile.loaded);
  EXPECT_FALSE(explanation.profile.valid);
  EXPECT_EQ(explanation.choice, "cpu");
  EXPECT_NE(explanation.profile.detail.find("was tuned with gpu NVIDIA H200, this run has cpu"), std::string::npos)
      << explanation.profile.detail;
  EXPECT_NE(explanation.to_text().find("profile:  miss: tuned profile '" + path + "' was tuned with gpu"), std::string::npos);
  ASSERT_FALSE(warnings.empty());
}

TEST_F(MoeProfileTest, RunServesOnTheProfilesBackend) {
  // Correctness of each backend is moe_runner_test's; this shows run() takes the profile's pick.
  const std::string path = write_file("moe_profile_run.json", profile_json("cpu"));
  MoeRunner runner(options(path));
  MoeCase c;  // T=3 E=5 k=2 H=64 I=32, the profile's ref entry
  std::mt19937_64 rng(fp4gemm::testing::fresh_seed());
  const MoeInputs inputs = make_moe_inputs(c, rng);
  const MoeLayerHandle layer = runner.prepare(inputs.layer.weights);
  PoisonedMoeOutput out = make_poisoned_moe_output(c.tokens, c.layer.hidden, c.output);
  runner.run(inputs.call, layer, out.view);
  EXPECT_FALSE(still_poisoned(out));
  EXPECT_EQ(layer.prepared_backends(), std::vector<std::string>{"ref"});
}

}  // namespace
}  // namespace fp4gemm::moe::testing
