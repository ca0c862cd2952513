// Configuration precedence: argument > current variable > deprecated variable (> profile > auto),
// with the one-time warnings, tested through the reusable resolver with both the GEMM and the
// (future) MoE variable names, and through the Runner.
#include <gtest/gtest.h>

#include <map>

#include "backends/ref/ref_backend.hpp"
#include "dispatch/faulty_backends.hpp"
#include "dispatch/log.hpp"
#include "fp4gemm/dispatch/backend_setting.hpp"
#include "fp4gemm/error.hpp"
#include "fp4gemm/registry.hpp"
#include "fp4gemm/runner.hpp"

namespace fp4gemm::testing {
namespace {

using dispatch::BackendSetting;
using dispatch::SettingSource;

const std::vector<std::string> kNames{"ref", "cpu", "cublaslt"};
const dispatch::SettingVariables kMoeVariables{"FP4GEMM_MOE_BACKEND", "FP4GEMM_MOE_GEMM_BACKEND"};

dispatch::EnvironmentLookup environment_of(std::map<std::string, std::string> variables) {
  return [variables](const std::string& name) -> std::optional<std::string> {
    auto found = variables.find(name);
    if (found == variables.end()) return std::nullopt;
    return found->second;
  };
}

bool has_warning(const BackendSetting& setting, const std::string& phrase) {
  for (const auto& warning : setting.warnings)
    if (warning.message.find(phrase) != std::string::npos) return true;
  return false;
}

struct PrecedenceCase {
  std::string argument, current, deprecated;  // empty: unset
  std::string expected_backend;
  SettingSource expected_source;
  std::vector<std::string> expected_warnings;  // phrases, in any order; the count must match
};

TEST(BackendSetting, PrecedenceMatrixWithWarnings) {
  const PrecedenceCase cases[] = {
      {"", "", "", "", SettingSource::none, {}},
      {"cpu", "", "", "cpu", SettingSource::argument, {}},
      {"", "cpu", "", "cpu", SettingSource::environment, {}},
      {"", "", "ref", "ref", SettingSource::deprecated_environment, {"is deprecated; rename it to"}},
      {"cpu", "cpu", "", "cpu", SettingSource::argument, {}},  // agreeing: nothing to say
      {"cpu", "ref", "", "cpu", SettingSource::argument, {"wins over FP4GEMM_MOE_BACKEND=ref"}},
      {"cpu", "", "ref", "cpu", SettingSource::argument, {"wins over FP4GEMM_MOE_GEMM_BACKEND=ref"}},
      {"", "cpu", "ref", "cpu", SettingSource::environment, {"is deprecated and ignored"}},
      {"ref", "cpu", "cublaslt", "ref", SettingSource::argument,
       {"wins over FP4GEMM_MOE_BACKEND=cpu", "is deprecated and ignored"}},
      {"auto", "cpu", "", "auto", SettingSource::argument, {"wins over FP4GEMM_MOE_BACKEND=cpu"}},
  };
  for (const auto& c : cases) {
    std::map<std::string, std::string> variables;
    if (!c.current.empty()) variables[kMoeVariables.current] = c.current;
    if (!c.deprecated.empty()) variables[kMoeVariables.deprecated] = c.deprecated;
    const std::string what = "argument='" + c.argument + "' current='" + c.current + "' deprecated='" + c.deprecated + "'";
    const BackendSetting setting =
        dispatch::resolve_backend_setting(c.argument, kMoeVariables, environment_of(variables), kNames);
    EXPECT_EQ(setting.backend, c.expected_backend) << what;
    EXPECT_EQ(setting.source, c.expected_source) << what;
    EXPECT_EQ(setting.warnings.size(), c.expected_warnings.size()) << what;
    for (const auto& phrase : c.expected_warnings) EXPECT_TRUE(has_warning(setting, phrase)) << what << ": " << phrase;
  }
}

TEST(BackendSetting, UnknownNamesAreAnErrorListingTheValidNames) {
  for (const auto& [argument, variables] :
       std::vector<std::pair<std::string, std::map<std::string, std::string>>>{
           {"cuda_magic", {}}, {"", {{"FP4GEMM_MOE_BACKEND", "nope"}}}, {"", {{"FP4GEMM_MOE_GEMM_BACKEND", "nope"}}}}) {
    try {
      dispatch::resolve_backend_setting(argument, kMoeVariables, environment_of(variables), kNames);
      FAIL() << "accepted an unknown backend name";
    } catch (const Error& error) {
      EXPECT_EQ(error.code(), ErrorCode::invalid_argument);
      const std::string message = error.what();
      EXPECT_NE(message.find("valid names: auto, ref, cpu, cublaslt"), std::string::npos) << message;
    }
  }
}

TEST(BackendSetting, EmptyValuesCountAsUnset) {
  const auto setting = dispatch::resolve_backend_setting(
      "", kMoeVariables, environment_of({{"FP4GEMM_MOE_BACKEND", ""}, {"FP4GEMM_MOE_GEMM_BACKEND", "ref"}}), kNames);
  EXPECT_EQ(setting.backend, "ref");
  EXPECT_EQ(setting.source, SettingSource::deprecated_environment);
}

// The backend renamed from cuda_decode to cuda_nvfp4: the old name still selects it, from the
// argument and from the environment, with a deprecation warning that names the new one.
TEST(BackendSetting, TheDeprecatedCudaDecodeNameSelectsCudaNvfp4WithAWarning) {
  const std::vector<std::string> names{"ref", "cuda_nvfp4"};
  for (const auto& [argument, variables] :
       {std::pair<std::string, std::map<std::string, std::string>>{"cuda_decode", {}}, {"", {{"FP4GEMM_BACKEND", "cuda_decode"}}}}) {
    const auto setting = dispatch::resolve_backend_setting(argument, dispatch::kGemmBackendVariables, environment_of(variables), names);
    EXPECT_EQ(setting.backend, "cuda_nvfp4") << argument;
    ASSERT_EQ(setting.warnings.size(), 1u) << argument;
    EXPECT_EQ(setting.warnings[0].key, "deprecated-backend:cuda_decode");
    EXPECT_EQ(setting.warnings[0].message, "the backend name 'cuda_decode' is deprecated; use 'cuda_nvfp4' (the same backend)");
  }
  const auto current = dispatch::resolve_backend_setting("cuda_nvfp4", dispatch::kGemmBackendVariables, environment_of({}), names);
  EXPECT_EQ(current.backend, "cuda_nvfp4");
  EXPECT_TRUE(current.warnings.empty());
  EXPECT_EQ(current_backend_name("cuda_decode"), "cuda_nvfp4");
  EXPECT_EQ(current_backend_name("cpu"), "cpu");
  EXPECT_EQ(deprecated_backend_warning("cpu"), "");
}

TEST(BackendSetting, GemmVariablesAreTheOnesTheRunnerReads) {
  EXPECT_EQ(dispatch::kGemmBackendVariables.current, "FP4GEMM_BACKEND");
  EXPECT_EQ(dispatch::kGemmBackendVariables.deprecated, "FP4GEMM_GEMM_BACKEND");
}

// Through the Runner: argument > FP4GEMM_BACKEND > tuned profile > auto, with real explain output.
class RunnerPrecedence : public ::testing::Test {
 protected:
  RunnerOptions options(std::map<std::string, std::string> variables, const std::string& argument,
                        const std::string& profile_path) {
    RunnerOptions options;
    options.backend = argument;
    options.simulated_device = probe_cpu();
    options.environment = environment_of(std::move(variables));
    options.profile_path = profile_path;
    options.log = [this](dispatch::LogLevel, const std::string& message) { messages.push_back(message); };
    options.backends = {std::make_shared<RefBackend>(), std::make_shared<FaultyBackend>("cpu", Fault::none),
                        std::make_shared<FaultyBackend>("tuned", Fault::none)};
    return options;
  }
  std::string write_profile() {
    const std::string path = ::testing::TempDir() + "precedence_profile.json";
    dispatch::TunedProfile profile;
    profile.metadata = dispatch::metadata_for(probe_cpu());
    profile.entries.push_back({64, 256, 512, ActivationType::bf16, "tuned"});
    FILE* file = std::fopen(path.c_str(), "w");
    std::fputs(profile.to_json().c_str(), file);
    std::fclose(file);
    return path;
  }
  std::vector<std::string> messages;
  const GemmProblem problem{8, 256, 512, ActivationType::bf16, DType::f32};
};

TEST_F(RunnerPrecedence, ArgumentBeatsEnvironmentBeatsProfileBeatsAuto) {
  const std::string profile = write_profile();
  EXPECT_EQ(Runner(options({}, "", "")).explain(problem).choice, "cpu") << "auto: the no-GPU order starts with cpu";
  EXPECT_EQ(Runner(options({}, "", profile)).explain(problem).choice, "tuned") << "the profile overrides auto";
  EXPECT_EQ(Runner(options({{"FP4GEMM_BACKEND", "ref"}}, "", profile)).explain(problem).choice, "ref")
      << "the environment overrides the profile";
  EXPECT_EQ(Runner(options({{"FP4GEMM_BACKEND", "ref"}}, "cpu", profile)).explain(problem).choice, "cpu")
      << "the argument overrides the environment";
  EXPECT_EQ(Runner(options({{"FP4GEMM_GEMM_BACKEND", "ref"}}, "", profile)).explain(problem).choice, "ref")
      << "the deprecated alias still overrides the profile";
  const auto explained = Runner(options({{"FP4GEMM_BACKEND", "ref"}}, "", profile)).explain(problem);
  EXPECT_EQ(explained.setting_origin, "FP4GEMM_BACKEND");
  EXPECT_NE(explained.profile.detail.find("not consulted"), std::string::npos) << explained.profile.detail;
}

TEST_F(RunnerPrecedence, DeprecationWarningIsPrintedOncePerProcess) {
  const bool already_reported = dispatch::process_once_log().seen("deprecated:FP4GEMM_GEMM_BACKEND");
  Runner first(options({{"FP4GEMM_GEMM_BACKEND", "ref"}}, "", ""));
  Runner second(options({{"FP4GEMM_GEMM_BACKEND", "ref"}}, "", ""));
  int deprecations = 0;
  for (const auto& message : messages) deprecations += message.find("FP4GEMM_GEMM_BACKEND is deprecated") != std::string::npos;
  EXPECT_EQ(deprecations, already_reported ? 0 : 1);
  EXPECT_TRUE(dispatch::process_once_log().seen("deprecated:FP4GEMM_GEMM_BACKEND"));
}

TEST_F(RunnerPrecedence, UnknownBackendInTheEnvironmentIsAnError) {
  try {
    Runner runner(options({{"FP4GEMM_BACKEND", "cuda_fast"}}, "", ""));
    FAIL() << "an unknown FP4GEMM_BACKEND was accepted";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("unknown backend 'cuda_fast' (from FP4GEMM_BACKEND); valid names: auto, ref, cpu, tuned"),
              std::string::npos)
        << error.what();
  }
}

}  // namespace
}  // namespace fp4gemm::testing
