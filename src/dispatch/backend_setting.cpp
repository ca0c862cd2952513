// Resolution of the user's backend request: argument > current variable > deprecated variable.
#include "fp4gemm/dispatch/backend_setting.hpp"

#include <algorithm>
#include <cstdlib>

#include "fp4gemm/error.hpp"
#include "fp4gemm/registry.hpp"

namespace fp4gemm::dispatch {
namespace {

std::optional<std::string> non_empty(const EnvironmentLookup& environment, const std::string& name) {
  if (name.empty() || !environment) return std::nullopt;
  auto value = environment(name);
  if (value && value->empty()) return std::nullopt;
  return value;
}

std::string joined(const std::vector<std::string>& names) {
  std::string text;
  for (const auto& name : names) text += (text.empty() ? "" : ", ") + name;
  return text;
}

}  // namespace

EnvironmentLookup process_environment() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* value = std::getenv(name.c_str());
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  };
}

const char* to_string(SettingSource source) {
  switch (source) {
    case SettingSource::none: return "none";
    case SettingSource::argument: return "argument";
    case SettingSource::environment: return "environment";
    case SettingSource::deprecated_environment: return "deprecated environment";
  }
  return "?";
}

BackendSetting resolve_backend_setting(const std::string& argument, const SettingVariables& variables,
                                       const EnvironmentLookup& environment,
                                       const std::vector<std::string>& valid_names) {
  const std::optional<std::string> current = non_empty(environment, variables.current);
  const std::optional<std::string> deprecated = non_empty(environment, variables.deprecated);
  BackendSetting setting;

  if (!argument.empty()) {
    setting.backend = argument;
    setting.source = SettingSource::argument;
    setting.origin = "--backend/API argument";
    // The environment variable that would have applied without the argument.
    const auto& overridden = current ? current : deprecated;
    const std::string& overridden_name = current ? variables.current : variables.deprecated;
    if (overridden && *overridden != argument) {
      setting.warnings.push_back({"override:" + overridden_name + "=" + *overridden + ":" + argument,
                                  "the backend argument '" + argument + "' wins over " + overridden_name + "=" +
                                      *overridden + " from the environment; unset " + overridden_name +
                                      " to silence this warning"});
    }
  } else if (current) {
    setting.backend = *current;
    setting.source = SettingSource::environment;
    setting.origin = variables.current;
  } else if (deprecated) {
    setting.backend = *deprecated;
    setting.source = SettingSource::deprecated_environment;
    setting.origin = variables.deprecated + " (deprecated)";
  }

  // The deprecated alias: honoured only when nothing newer is set, and always announced.
  if (deprecated && setting.source == SettingSource::deprecated_environment) {
    setting.warnings.push_back({"deprecated:" + variables.deprecated,
                                variables.deprecated + " is deprecated; rename it to " + variables.current +
                                    " (same values); it is honoured for now because " + variables.current +
                                    " is not set"});
  } else if (deprecated && current) {
    setting.warnings.push_back({"deprecated-ignored:" + variables.deprecated,
                                variables.deprecated + "=" + *deprecated + " is deprecated and ignored because " +
                                    variables.current + "=" + *current + " is set; unset " + variables.deprecated});
  }

  // A deprecated backend name: its successor, announced once.
  if (const std::string warning = deprecated_backend_warning(setting.backend); !warning.empty()) {
    setting.warnings.push_back({"deprecated-backend:" + setting.backend, warning});
    setting.backend = current_backend_name(setting.backend);
  }

  if (!setting.backend.empty() && setting.backend != "auto" &&
      std::find(valid_names.begin(), valid_names.end(), setting.backend) == valid_names.end()) {
    throw Error(ErrorCode::invalid_argument, "unknown backend '" + setting.backend + "' (from " + setting.origin +
                                                 "); valid names: auto, " + joined(valid_names));
  }
  return setting;
}

}  // namespace fp4gemm::dispatch
