#pragma once
// Every backend compiled into this build, in one flat list.
#include <memory>
#include <string>
#include <vector>

#include "fp4gemm/backend.hpp"

namespace fp4gemm {

// Fresh instances of all backends compiled in, in the registry's fixed order.
std::vector<std::unique_ptr<Backend>> make_all_backends();
// Names of all backends compiled in.
std::vector<std::string> backend_names();
// A fresh instance by name (a deprecated alias names its successor); throws Error listing the
// valid names when unknown.
std::unique_ptr<Backend> make_backend(const std::string& name);

// Backend names kept working after a rename: `cuda_decode` is `cuda_nvfp4` (its kernels serve
// prefill too, so "decode" misnamed it). Wherever a name is accepted (API and --backend,
// FP4GEMM_BACKEND, a tuned profile) the alias is replaced by the current name with one warning.
// `name`'s current name: itself unless it is a deprecated alias.
std::string current_backend_name(const std::string& name);
// The one-line deprecation warning for an alias, or "" when `name` is not one.
std::string deprecated_backend_warning(const std::string& name);

}  // namespace fp4gemm
