#pragma once
// The `auto` order: for each GPU architecture family, the backends to try, best first. Each
// backend's own checks then filter the list per problem (cuda_decode only takes M <= 64,
// cublaslt only W4A4, ...), so the order only has to rank backends that can both serve.
#include <string>
#include <vector>

#include "fp4gemm/device.hpp"

namespace fp4gemm::dispatch {

enum class ArchFamily { sm12x, sm10x, sm90, sm8x, other_gpu, no_gpu };
const char* to_string(ArchFamily family);  // "SM 12.x", ..., "no GPU"

// The family of `gpu`; no_gpu for a CPU device.
ArchFamily family_of(const DeviceInfo& gpu);

struct PreferenceRow {
  ArchFamily family;
  std::vector<std::string> order;  // backend names, best first
  const char* evidence;            // the measurement (or its absence) behind this order
};

// The whole table (for docs and `explain --json`).
const std::vector<PreferenceRow>& preference_table();
const PreferenceRow& preference_for(ArchFamily family);

}  // namespace fp4gemm::dispatch
