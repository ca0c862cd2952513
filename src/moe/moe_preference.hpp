#pragma once
// The MoE `auto` order: the one place it lives. Each backend's checks then filter it per problem.
#include <string>
#include <vector>

#include "dispatch/preference.hpp"

namespace fp4gemm::moe {

struct MoePreference {
  std::vector<std::string> order;  // best first
  const char* evidence;            // the measurement (or its absence) behind the order
};

// The order for a runner whose primary device is of `family`.
const MoePreference& moe_preference_for(dispatch::ArchFamily family);

}  // namespace fp4gemm::moe
