#pragma once
// Tuned profiles: which backend measured fastest for a problem on one GPU with one CUDA and one
// fp4gemm version. JSON:
//   {"metadata": {"gpu": "NVIDIA H200", "cuda": "13.0", "fp4gemm": "0.1.0"},
//    "entries": [{"m_max": 64, "n": 4096, "k": 4096, "activation": "bf16", "backend": "cuda_nvfp4"}]}
// An entry serves problems with its n, k and activation and m <= m_max; the entry with the
// smallest such m_max wins. A profile whose metadata differs from the running device is ignored
// as a whole, with the reason shown by `explain`.
// MoE layers have their own optional array (profiles without it still load):
//    "moe": [{"tokens_max": 8, "experts": 512, "top_k": 10, "hidden": 4096, "intermediate": 1024,
//             "activation": "bf16", "backend": "cpu"}]
// An MoE entry serves layers with its experts, top_k, hidden, intermediate and activation and
// tokens <= tokens_max; the smallest such tokens_max wins, as for GEMM entries.
#include <cstdint>
#include <string>
#include <vector>

#include "fp4gemm/device.hpp"
#include "fp4gemm/types.hpp"

namespace fp4gemm::dispatch {

// NOTE: keep equal to project(VERSION) in CMakeLists.txt; profiles record it.
inline constexpr const char* kLibraryVersion = "0.1.0";

struct ProfileMetadata {
  std::string gpu;      // DeviceInfo::name of the GPU ("cpu" when tuned without one)
  std::string cuda;     // CUDA runtime "major.minor", "none" without CUDA
  std::string fp4gemm;  // kLibraryVersion
  bool operator==(const ProfileMetadata&) const = default;
};

// The metadata a profile must carry to be valid for `device`.
ProfileMetadata metadata_for(const DeviceInfo& device);

struct ProfileEntry {
  std::int64_t m_max = 0;
  std::int64_t n = 0;
  std::int64_t k = 0;
  ActivationType activation = ActivationType::bf16;
  std::string backend;
};

// The shape an MoE entry is keyed by (all of moe::MoeProblem but the token count).
struct MoeProfileShape {
  std::int64_t experts = 0;
  int top_k = 0;
  std::int64_t hidden = 0;
  std::int64_t intermediate = 0;
  ActivationType activation = ActivationType::bf16;
  bool operator==(const MoeProfileShape&) const = default;
};

struct MoeProfileEntry {
  std::int64_t tokens_max = 0;
  MoeProfileShape shape;
  std::string backend;
};

struct TunedProfile {
  std::string origin;  // file path or "<memory>", for messages
  ProfileMetadata metadata;
  std::vector<ProfileEntry> entries;
  std::vector<MoeProfileEntry> moe_entries;
  // Entries that named a backend by a deprecated alias (current_backend_name replaced it): one
  // warning per alias, for the runner to report.
  std::vector<std::string> deprecated_names;

  // Throws Error(io) with a sentence naming the file and the problem.
  static TunedProfile load(const std::string& path);
  static TunedProfile parse(const std::string& json_text, const std::string& origin);
  std::string to_json() const;

  // Empty when the profile applies to `expected`, else why not ("tuned on NVIDIA B200, this is ...").
  std::string mismatch_reason(const ProfileMetadata& expected) const;
  // The best entry for `problem`, or nullptr.
  const ProfileEntry* find(const GemmProblem& problem) const;
  // The best MoE entry for `shape` at `tokens`, or nullptr.
  const MoeProfileEntry* find_moe(const MoeProfileShape& shape, std::int64_t tokens) const;
};

}  // namespace fp4gemm::dispatch
