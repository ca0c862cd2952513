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
// A fresh instance by name; throws Error listing the valid names when unknown.
std::unique_ptr<Backend> make_backend(const std::string& name);

}  // namespace fp4gemm
