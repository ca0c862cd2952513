#include "moe_execution.hpp"

#include <optional>

namespace fp4gemm::cli {
namespace {
std::optional<MoeExecution>& registered() {
  static std::optional<MoeExecution> execution;
  return execution;
}
}  // namespace

const MoeExecution* moe_execution() { return registered() ? &*registered() : nullptr; }

RegisterMoeExecution::RegisterMoeExecution(MoeExecution execution) { registered() = std::move(execution); }

}  // namespace fp4gemm::cli
