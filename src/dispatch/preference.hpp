#pragma once
// The `auto` order: for each GPU architecture family, the backends to try, best first. Each
// backend's own checks then filter the list per problem (cuda_nvfp4 only takes M <= 64,
// cublaslt only W4A4, ...), so the order only has to rank backends that can both serve.
#include <cstdint>
#include <string>
#include <vector>

#include "fp4gemm/device.hpp"

namespace fp4gemm::dispatch {

enum class ArchFamily { sm12x, sm10x, sm90, sm8x, other_gpu, no_gpu };
const char* to_string(ArchFamily family);  // "SM 12.x", ..., "no GPU"

// The family of `gpu`; no_gpu for a CPU device.
ArchFamily family_of(const DeviceInfo& gpu);

// A family may have several rows, one per range of problems: the first row of the family with
// M <= max_m, N >= min_n and K >= min_k serves it (rows of a family are listed by non-decreasing
// max_m, a row with N or K bounds before the one without; the last row has no bounds).
struct PreferenceRow {
  ArchFamily family;
  std::vector<std::string> order;  // backend names, best first
  const char* evidence;            // the measurement (or its absence) behind this order
  std::int64_t max_m = INT64_MAX;
  std::int64_t min_n = 0;  // weight rows (output columns)
  std::int64_t min_k = 0;  // reduction size
};

// The whole table (for docs and `explain --json`).
const std::vector<PreferenceRow>& preference_table();
// The row of `family` that serves an M x N x K problem.
const PreferenceRow& preference_for(ArchFamily family, std::int64_t m, std::int64_t n, std::int64_t k);

}  // namespace fp4gemm::dispatch
