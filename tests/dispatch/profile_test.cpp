// Tuned profiles: format round trip, entry lookup, invalidation on metadata mismatch, and how the
// runner reports a hit, a miss and an invalid profile.
#include <gtest/gtest.h>

#include <cstdio>

#include "backends/ref/ref_backend.hpp"
#include "dispatch/faulty_backends.hpp"
#include "dispatch/log.hpp"
#include "fp4gemm/dispatch/profile.hpp"
#include "fp4gemm/error.hpp"
#include "fp4gemm/runner.hpp"

namespace fp4gemm::testing {
namespace {

using dispatch::TunedProfile;

const char* kProfileJson = R"({
  "metadata": {"gpu": "NVIDIA H200", "cuda": "13.0", "fp4gemm": "0.1.0"},
  "entries": [
    {"m_max": 64, "n": 4096, "k": 4096, "activation": "bf16", "backend": "cuda_nvfp4"},
    {"m_max": 8, "n": 4096, "k": 4096, "activation": "bf16", "backend": "tiny"},
    {"m_max": 100000, "n": 4096, "k": 4096, "activation": "bf16", "backend": "cuda_dequant_cublas"},
    {"m_max": 64, "n": 4096, "k": 4096, "activation": "nvfp4", "backend": "w4a4"}
  ]
})";

std::string write_file(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + name;
  FILE* file = std::fopen(path.c_str(), "w");
  std::fputs(text.c_str(), file);
  std::fclose(file);
  return path;
}

TEST(TunedProfile, FindsTheSmallestMatchingBucket) {
  const TunedProfile profile = TunedProfile::parse(kProfileJson, "<test>");
  ASSERT_EQ(profile.entries.size(), 4u);
  const auto backend_for = [&](std::int64_t m, ActivationType activation) {
    const auto* entry = profile.find({m, 4096, 4096, activation, DType::bf16});
    return entry ? entry->backend : std::string("<none>");
  };
  EXPECT_EQ(backend_for(1, ActivationType::bf16), "tiny");
  EXPECT_EQ(backend_for(8, ActivationType::bf16), "tiny");
  EXPECT_EQ(backend_for(9, ActivationType::bf16), "cuda_nvfp4");
  EXPECT_EQ(backend_for(64, ActivationType::bf16), "cuda_nvfp4");
  EXPECT_EQ(backend_for(65, ActivationType::bf16), "cuda_dequant_cublas");
  EXPECT_EQ(backend_for(100001, ActivationType::bf16), "<none>");
  EXPECT_EQ(backend_for(1, ActivationType::nvfp4), "w4a4");
  EXPECT_EQ(backend_for(1, ActivationType::f32), "<none>");
  EXPECT_EQ(profile.find({1, 4096, 8192, ActivationType::bf16, DType::bf16}), nullptr) << "K differs";
}

TEST(TunedProfile, RoundTripsThroughJson) {
  const TunedProfile profile = TunedProfile::parse(kProfileJson, "<test>");
  const TunedProfile again = TunedProfile::parse(profile.to_json(), "<again>");
  EXPECT_EQ(again.metadata, profile.metadata);
  ASSERT_EQ(again.entries.size(), profile.entries.size());
  for (std::size_t i = 0; i < again.entries.size(); ++i) {
    EXPECT_EQ(again.entries[i].backend, profile.entries[i].backend);
    EXPECT_EQ(again.entries[i].m_max, profile.entries[i].m_max);
    EXPECT_EQ(again.entries[i].activation, profile.entries[i].activation);
  }
}

TEST(TunedProfile, MetadataMismatchSaysWhichFieldDiffers) {
  const TunedProfile profile = TunedProfile::parse(kProfileJson, "h200.json");
  dispatch::ProfileMetadata here{"NVIDIA H200", "13.0", "0.1.0"};
  EXPECT_EQ(profile.mismatch_reason(here), "");
  here.gpu = "NVIDIA B200";
  EXPECT_NE(profile.mismatch_reason(here).find("tuned with gpu NVIDIA H200, this run has NVIDIA B200"), std::string::npos)
      << profile.mismatch_reason(here);
  here = {"NVIDIA H200", "12.8", "0.1.0"};
  EXPECT_NE(profile.mismatch_reason(here).find("CUDA 13.0, this run has 12.8"), std::string::npos);
  here = {"NVIDIA H200", "13.0", "0.2.0"};
  EXPECT_NE(profile.mismatch_reason(here).find("fp4gemm 0.1.0, this run has 0.2.0"), std::string::npos);
}

TEST(TunedProfile, MalformedFilesAreIoErrorsThatNameTheFile) {
  const std::pair<std::string, std::string> broken[] = {
      {"not json", "is not valid"},
      {R"({"entries": []})", "is not valid"},
      {R"({"metadata": {"gpu": "x", "cuda": "13.0", "fp4gemm": "0.1.0"}, "entries": [{"m_max": 1, "n": 1, "k": 16, "activation": "int8", "backend": "cpu"}]})",
       "activation 'int8' is not one of bf16, f32, nvfp4"},
      {R"({"metadata": {"gpu": "x", "cuda": "13.0", "fp4gemm": "0.1.0"}, "entries": [{"m_max": 0, "n": 1, "k": 16, "activation": "bf16", "backend": "cpu"}]})",
       "must be positive"},
  };
  for (const auto& [text, phrase] : broken) {
    try {
      TunedProfile::parse(text, "bad.json");
      FAIL() << "accepted: " << text;
    } catch (const Error& error) {
      EXPECT_EQ(error.code(), ErrorCode::io);
      EXPECT_NE(std::string(error.what()).find("bad.json"), std::string::npos) << error.what();
      EXPECT_NE(std::string(error.what()).find(phrase), std::string::npos) << error.what();
    }
  }
  EXPECT_THROW(TunedProfile::load(::testing::TempDir() + "does_not_exist.json"), Error);
}

class RunnerProfile : public ::testing::Test {
 protected:
  RunnerOptions options_for(const DeviceInfo& device, const std::string& profile_path) {
    RunnerOptions options;
    options.simulated_device = device;
    options.profile_path = profile_path;
    options.environment = [](const std::string&) { return std::optional<std::string>(); };
    options.log = [this](dispatch::LogLevel, const std::string& message) { warnings.push_back(message); };
    options.backends = {std::make_shared<RefBackend>(), std::make_shared<FaultyBackend>("cpu", Fault::none),
                        std::make_shared<FaultyBackend>("tiny", Fault::none), cuda_nvfp4_stand_in(),
                        cuda_dequant_cublas_stand_in()};
    return options;
  }
  std::vector<std::string> warnings;
};

TEST_F(RunnerProfile, HitMissAndInvalidation) {
  const std::string path = write_file("runner_profile.json", kProfileJson);
  DeviceInfo h200 = simulated_gpu(9, 0, 130100, "NVIDIA H200");

  Runner runner(options_for(h200, path));
  auto hit = runner.explain({4, 4096, 4096, ActivationType::bf16, DType::bf16});
  EXPECT_TRUE(hit.profile.loaded && hit.profile.valid && hit.profile.hit) << hit.profile.detail;
  EXPECT_EQ(hit.choice, "tiny") << "the profile entry overrides the SM 9.0 order";
  EXPECT_EQ(hit.candidates.front().origin, "profile");
  EXPECT_NE(hit.to_text().find("hit: tuned profile"), std::string::npos) << hit.to_text();

  // An entry whose backend cannot serve falls back to the auto order and says why.
  auto large = runner.explain({65, 4096, 4096, ActivationType::bf16, DType::bf16});
  EXPECT_TRUE(large.profile.hit) << "cuda_dequant_cublas passes its checks, so it is a hit";
  EXPECT_EQ(large.choice, "cuda_dequant_cublas");
  auto nvfp4 = runner.explain({1, 4096, 4096, ActivationType::nvfp4, DType::bf16});
  EXPECT_FALSE(nvfp4.profile.hit);
  EXPECT_NE(nvfp4.profile.detail.find("names 'w4a4', which cannot serve now (not compiled into this build"),
            std::string::npos)
      << nvfp4.profile.detail;
  EXPECT_EQ(nvfp4.choice, "cuda_nvfp4");

  auto miss = runner.explain({1, 1024, 4096, ActivationType::bf16, DType::bf16});
  EXPECT_FALSE(miss.profile.hit);
  EXPECT_NE(miss.profile.detail.find("has no entry for n=1024 k=4096 a=bf16"), std::string::npos) << miss.profile.detail;
  EXPECT_EQ(miss.choice, "cuda_nvfp4");
  EXPECT_TRUE(warnings.empty());

  // Tuned on an H200, loaded on a B200: ignored as a whole, with the reason in explain.
  Runner other(options_for(simulated_gpu(10, 0, 130100, "NVIDIA B200"), path));
  auto invalid = other.explain({4, 4096, 4096, ActivationType::bf16, DType::bf16});
  EXPECT_TRUE(invalid.profile.loaded);
  EXPECT_FALSE(invalid.profile.valid);
  EXPECT_FALSE(invalid.profile.hit);
  EXPECT_NE(invalid.profile.detail.find("tuned with gpu NVIDIA H200, this run has NVIDIA B200"), std::string::npos)
      << invalid.profile.detail;
  EXPECT_EQ(invalid.choice, "cuda_nvfp4");
}

// A profile written before the rename names cuda_decode: its entries serve cuda_nvfp4, and the
// runner warns once that the name is deprecated.
TEST_F(RunnerProfile, TheDeprecatedCudaDecodeNameServesCudaNvfp4WithAWarning) {
  const std::string path = write_file("runner_profile_alias.json", R"({
  "metadata": {"gpu": "NVIDIA H200", "cuda": "13.0", "fp4gemm": "0.1.0"},
  "entries": [{"m_max": 64, "n": 2048, "k": 4096, "activation": "bf16", "backend": "cuda_decode"}]
})");
  const dispatch::TunedProfile profile = dispatch::TunedProfile::load(path);
  ASSERT_EQ(profile.entries.size(), 1u);
  EXPECT_EQ(profile.entries[0].backend, "cuda_nvfp4");
  EXPECT_EQ(profile.deprecated_names, std::vector<std::string>{"cuda_decode"});
  const bool already_reported = dispatch::process_once_log().seen("deprecated-backend:cuda_decode");
  Runner runner(options_for(simulated_gpu(9, 0, 130100, "NVIDIA H200"), path));
  const auto hit = runner.explain({4, 2048, 4096, ActivationType::bf16, DType::bf16});
  EXPECT_TRUE(hit.profile.hit) << hit.profile.detail;
  EXPECT_EQ(hit.choice, "cuda_nvfp4");
  int deprecations = 0;
  for (const auto& message : warnings) deprecations += message.find("'cuda_decode' is deprecated; use 'cuda_nvfp4'") != std::string::npos;
  EXPECT_EQ(deprecations, already_reported ? 0 : 1);
  EXPECT_TRUE(dispatch::process_once_log().seen("deprecated-backend:cuda_decode"));
}

}  // namespace
}  // namespace fp4gemm::testing
