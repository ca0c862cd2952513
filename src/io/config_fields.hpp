#pragma once
// Reading size fields of a model's config.json, shared by its GEMM shapes and its decode step.
#include <cstdint>
#include <initializer_list>
#include <string>

#include <nlohmann/json.hpp>

#include "fp4gemm/error.hpp"

namespace fp4gemm::io::config_fields {

using nlohmann::json;

[[noreturn]] inline void throw_config(const std::string& where, const std::string& message) {
  throw Error(ErrorCode::io, where + ": " + message);
}

// A size or count: a non-negative integer when present; 0 when absent or null. Configs write 0 for
// "none" (first_k_dense_replace, n_shared_experts, num_experts of a dense variant), so 0 reads as
// absent everywhere.
inline std::int64_t size_field(const json& object, const char* key, const std::string& where) {
  const auto found = object.find(key);
  if (found == object.end() || found->is_null()) return 0;
  if (!found->is_number_integer() || found->get<std::int64_t>() < 0) {
    throw_config(where, std::string("\"") + key + "\" must be a non-negative integer, not " + found->dump());
  }
  return found->get<std::int64_t>();
}

inline std::int64_t required_field(const json& object, const char* key, const std::string& where, const std::string& why) {
  const std::int64_t value = size_field(object, key, where);
  if (value == 0) throw_config(where, std::string("has no \"") + key + "\" (or 0), which " + why);
  return value;
}

// The first of `keys` present, as size_field reads it; 0 when none is.
inline std::int64_t first_field(const json& object, std::initializer_list<const char*> keys, const std::string& where) {
  for (const char* key : keys)
    if (const std::int64_t value = size_field(object, key, where)) return value;
  return 0;
}

}  // namespace fp4gemm::io::config_fields
