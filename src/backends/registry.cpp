// The flat list of every backend compiled into this build. Order here is display order only;
// the `auto` preference lives with the runner.
#include "fp4gemm/registry.hpp"

#include "backends/cpu/cpu_backend.hpp"
#include "backends/ref/ref_backend.hpp"
#include "fp4gemm/error.hpp"
#ifdef FP4GEMM_WITH_CUDA
#include "backends/cuda_backends.hpp"
#endif

namespace fp4gemm {
namespace {

struct BackendAlias {
  const char* deprecated;
  const char* current;
};
constexpr BackendAlias kBackendAliases[] = {{"cuda_decode", "cuda_nvfp4"}};

}  // namespace

std::string current_backend_name(const std::string& name) {
  for (const BackendAlias& alias : kBackendAliases)
    if (name == alias.deprecated) return alias.current;
  return name;
}

std::string deprecated_backend_warning(const std::string& name) {
  const std::string current = current_backend_name(name);
  if (current == name) return "";
  return "the backend name '" + name + "' is deprecated; use '" + current + "' (the same backend)";
}

std::vector<std::unique_ptr<Backend>> make_all_backends() {
  std::vector<std::unique_ptr<Backend>> backends;
  backends.push_back(std::make_unique<RefBackend>());
  backends.push_back(std::make_unique<CpuBackend>());
#ifdef FP4GEMM_WITH_CUDA
  for (auto& backend : make_cuda_backends()) backends.push_back(std::move(backend));
#endif
  return backends;
}

std::vector<std::string> backend_names() {
  std::vector<std::string> names;
  for (const auto& backend : make_all_backends()) names.push_back(backend->name());
  return names;
}

std::unique_ptr<Backend> make_backend(const std::string& name) {
  const std::string current = current_backend_name(name);
  for (auto& backend : make_all_backends())
    if (backend->name() == current) return std::move(backend);
  std::string valid;
  for (const auto& known : backend_names()) valid += (valid.empty() ? "" : ", ") + known;
  throw Error(ErrorCode::invalid_argument, "unknown backend '" + name + "'; valid names: " + valid);
}

}  // namespace fp4gemm
