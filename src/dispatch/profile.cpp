// Tuned profiles: parse, validate against the running device, look up a problem.
#include "fp4gemm/dispatch/profile.hpp"

#include <algorithm>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "fp4gemm/error.hpp"
#include "fp4gemm/registry.hpp"

namespace fp4gemm::dispatch {
namespace {

ActivationType parse_activation(const std::string& text, const std::string& where) {
  if (text == "bf16") return ActivationType::bf16;
  if (text == "f32") return ActivationType::f32;
  if (text == "nvfp4") return ActivationType::nvfp4;
  throw Error(ErrorCode::io, where + ": activation '" + text + "' is not one of bf16, f32, nvfp4");
}

std::string cuda_version_text(int runtime_version) {
  if (runtime_version <= 0) return "none";
  return std::to_string(runtime_version / 1000) + "." + std::to_string((runtime_version % 1000) / 10);
}

// An entry's backend, with a deprecated alias replaced by its current name (and remembered once).
std::string read_backend(const nlohmann::json& item, TunedProfile& profile) {
  std::string backend = item.at("backend").get<std::string>();
  if (const std::string current = current_backend_name(backend); current != backend) {
    if (std::find(profile.deprecated_names.begin(), profile.deprecated_names.end(), backend) == profile.deprecated_names.end())
      profile.deprecated_names.push_back(backend);
    backend = current;
  }
  return backend;
}

MoeProfileEntry parse_moe_entry(const nlohmann::json& item, const std::string& where, TunedProfile& profile) {
  MoeProfileEntry entry;
  entry.tokens_max = item.at("tokens_max").get<std::int64_t>();
  entry.shape.experts = item.at("experts").get<std::int64_t>();
  entry.shape.top_k = item.at("top_k").get<int>();
  entry.shape.hidden = item.at("hidden").get<std::int64_t>();
  entry.shape.intermediate = item.at("intermediate").get<std::int64_t>();
  entry.shape.activation = parse_activation(item.at("activation").get<std::string>(), where);
  entry.backend = read_backend(item, profile);
  if (entry.tokens_max < 1 || entry.shape.experts < 1 || entry.shape.top_k < 1 || entry.shape.hidden < 1 ||
      entry.shape.intermediate < 1) {
    throw Error(ErrorCode::io, where + ": tokens_max, experts, top_k, hidden and intermediate must be positive");
  }
  return entry;
}

// The smallest-range entry whose range covers `size` among those `matches` accepts.
template <typename Entry, typename Matches, typename RangeOf>
const Entry* smallest_covering(const std::vector<Entry>& entries, std::int64_t size, Matches matches, RangeOf range_of) {
  const Entry* best = nullptr;
  for (const auto& entry : entries) {
    if (!matches(entry) || size > range_of(entry)) continue;
    if (best == nullptr || range_of(entry) < range_of(*best)) best = &entry;
  }
  return best;
}

}  // namespace

ProfileMetadata metadata_for(const DeviceInfo& device) {
  ProfileMetadata metadata;
  metadata.gpu = device.is_cuda() ? device.name : "cpu";
  metadata.cuda = device.is_cuda() ? cuda_version_text(device.cuda_runtime_version) : "none";
  metadata.fp4gemm = kLibraryVersion;
  return metadata;
}

TunedProfile TunedProfile::load(const std::string& path) {
  std::ifstream file(path);
  if (!file) throw Error(ErrorCode::io, "cannot open the tuned profile '" + path + "'; check the path or drop the option");
  std::stringstream text;
  text << file.rdbuf();
  return parse(text.str(), path);
}

TunedProfile TunedProfile::parse(const std::string& json_text, const std::string& origin) {
  TunedProfile profile;
  profile.origin = origin;
  try {
    const nlohmann::json document = nlohmann::json::parse(json_text);
    const auto& metadata = document.at("metadata");
    profile.metadata.gpu = metadata.at("gpu").get<std::string>();
    profile.metadata.cuda = metadata.at("cuda").get<std::string>();
    profile.metadata.fp4gemm = metadata.at("fp4gemm").get<std::string>();
    int index = 0;
    for (const auto& item : document.at("entries")) {
      const std::string where = "tuned profile '" + origin + "' entry " + std::to_string(index++);
      ProfileEntry entry;
      entry.m_max = item.at("m_max").get<std::int64_t>();
      entry.n = item.at("n").get<std::int64_t>();
      entry.k = item.at("k").get<std::int64_t>();
      entry.activation = parse_activation(item.at("activation").get<std::string>(), where);
      entry.backend = read_backend(item, profile);
      if (entry.m_max < 1 || entry.n < 1 || entry.k < 1) {
        throw Error(ErrorCode::io, where + ": m_max, n and k must be positive");
      }
      profile.entries.push_back(entry);
    }
    if (document.contains("moe")) {
      index = 0;
      for (const auto& item : document.at("moe")) {
        const std::string where = "tuned profile '" + origin + "' moe entry " + std::to_string(index++);
        profile.moe_entries.push_back(parse_moe_entry(item, where, profile));
      }
    }
  } catch (const nlohmann::json::exception& error) {
    throw Error(ErrorCode::io, "tuned profile '" + origin + "' is not valid: " + error.what() +
                                   "; expected {metadata:{gpu,cuda,fp4gemm}, entries:[{m_max,n,k,activation,backend}], optional moe:[{tokens_max,experts,top_k,hidden,intermediate,activation,backend}]}");
  }
  return profile;
}

std::string TunedProfile::to_json() const {
  nlohmann::json document;
  document["metadata"] = {{"gpu", metadata.gpu}, {"cuda", metadata.cuda}, {"fp4gemm", metadata.fp4gemm}};
  document["entries"] = nlohmann::json::array();
  for (const auto& entry : entries) {
    document["entries"].push_back({{"m_max", entry.m_max},
                                   {"n", entry.n},
                                   {"k", entry.k},
                                   {"activation", fp4gemm::to_string(entry.activation)},
                                   {"backend", entry.backend}});
  }
  // Written only when present, so a GEMM-only profile reads as it did before MoE entries existed.
  if (!moe_entries.empty()) {
    document["moe"] = nlohmann::json::array();
    for (const auto& entry : moe_entries) {
      document["moe"].push_back({{"tokens_max", entry.tokens_max},
                                 {"experts", entry.shape.experts},
                                 {"top_k", entry.shape.top_k},
                                 {"hidden", entry.shape.hidden},
                                 {"intermediate", entry.shape.intermediate},
                                 {"activation", fp4gemm::to_string(entry.shape.activation)},
                                 {"backend", entry.backend}});
    }
  }
  return document.dump(2);
}

std::string TunedProfile::mismatch_reason(const ProfileMetadata& expected) const {
  const auto differs = [&](const char* field, const std::string& tuned, const std::string& here) {
    return "tuned profile '" + origin + "' was tuned with " + field + " " + tuned + ", this run has " + here +
           "; it is ignored: re-run `fp4gemm tune` here";
  };
  if (metadata.gpu != expected.gpu) return differs("gpu", metadata.gpu, expected.gpu);
  if (metadata.cuda != expected.cuda) return differs("CUDA", metadata.cuda, expected.cuda);
  if (metadata.fp4gemm != expected.fp4gemm) return differs("fp4gemm", metadata.fp4gemm, expected.fp4gemm);
  return "";
}

const ProfileEntry* TunedProfile::find(const GemmProblem& problem) const {
  return smallest_covering(
      entries, problem.m,
      [&](const ProfileEntry& e) { return e.n == problem.n && e.k == problem.k && e.activation == problem.activation; },
      [](const ProfileEntry& e) { return e.m_max; });
}

const MoeProfileEntry* TunedProfile::find_moe(const MoeProfileShape& shape, std::int64_t tokens) const {
  return smallest_covering(
      moe_entries, tokens, [&](const MoeProfileEntry& e) { return e.shape == shape; },
      [](const MoeProfileEntry& e) { return e.tokens_max; });
}

}  // namespace fp4gemm::dispatch
