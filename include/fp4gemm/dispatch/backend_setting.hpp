#pragma once
// Which backend the user asked for, and where that request came from. Precedence:
// API argument / --backend  >  current environment variable  >  deprecated environment variable.
// (Below these, the runner consults the tuned profile, then the `auto` preference table.)
// The variable names are parameters so every runner (GEMM today, MoE later with
// FP4GEMM_MOE_BACKEND) resolves its setting through this one function.
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace fp4gemm::dispatch {

// Reads one environment variable; std::nullopt when unset. Injectable so tests need no setenv.
using EnvironmentLookup = std::function<std::optional<std::string>(const std::string& name)>;
EnvironmentLookup process_environment();

struct SettingVariables {
  std::string current;     // e.g. "FP4GEMM_BACKEND"
  std::string deprecated;  // e.g. "FP4GEMM_GEMM_BACKEND"; empty when there is no alias
};
inline const SettingVariables kGemmBackendVariables{"FP4GEMM_BACKEND", "FP4GEMM_GEMM_BACKEND"};

enum class SettingSource { none, argument, environment, deprecated_environment };
const char* to_string(SettingSource source);

struct SettingWarning {
  std::string key;      // identical for identical situations, so it can be reported once
  std::string message;  // a full sentence
};

struct BackendSetting {
  // A backend name, "auto", or empty when nothing was set (then: tuned profile, then auto).
  std::string backend;
  SettingSource source = SettingSource::none;
  std::string origin;  // "--backend/API argument", "FP4GEMM_BACKEND", ...: printed by explain
  std::vector<SettingWarning> warnings;

  bool is_explicit() const { return !backend.empty() && backend != "auto"; }
};

// Resolves the setting. Empty strings count as unset. The winning name must be "auto" or one of
// `valid_names`, else Error(invalid_argument) listing them. Warnings (deprecated alias used;
// argument and environment disagree; deprecated alias ignored) are returned, not printed.
BackendSetting resolve_backend_setting(const std::string& argument, const SettingVariables& variables,
                                       const EnvironmentLookup& environment,
                                       const std::vector<std::string>& valid_names);

}  // namespace fp4gemm::dispatch
