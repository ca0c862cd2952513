// Opening a checkpoint: a single file, or shards through model.safetensors.index.json.
#include "fp4gemm/io/checkpoint.hpp"

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

namespace fp4gemm::io {
namespace {

namespace fs = std::filesystem;

constexpr std::uintmax_t kMaxConfigBytes = 64ull << 20;  // index files of the largest models are ~10 MB

// A shard name from an index must stay inside the checkpoint directory: a plain relative path,
// no "..", so a hostile index cannot make us open arbitrary files.
bool is_safe_shard_name(const std::string& name) {
  if (name.empty() || name.front() == '/') return false;
  const fs::path path(name);
  for (const auto& part : path)
    if (part == "..") return false;
  return true;
}

std::vector<std::string> shards_in_directory(const fs::path& directory) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(directory))
    if (entry.is_regular_file() && entry.path().extension() == ".safetensors") names.push_back(entry.path().filename());
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

std::optional<std::string> read_small_text_file(const fs::path& path) {
  std::error_code error;
  if (!fs::exists(path, error)) return std::nullopt;
  const std::uintmax_t size = fs::file_size(path, error);
  if (error) throw_io("cannot read '" + path.string() + "': " + error.message());
  if (size > kMaxConfigBytes) throw_io("'" + path.string() + "' is " + std::to_string(size) + " bytes, too large for a config file");
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in && !in.eof()) throw_io("cannot read '" + path.string() + "'");
  return text.str();
}

void write_text_file(const fs::path& path, const std::string& text, const std::string& what) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) throw_io("cannot write " + (what.empty() ? "" : what + " ") + "'" + path.string() + "'; check that its directory exists and is writable");
}

void Checkpoint::add_file(SafetensorsFile file) {
  const std::size_t index = files_.size();
  for (const TensorEntry& entry : file.tensors()) {
    const auto [position, inserted] = where_.emplace(entry.name, index);
    if (!inserted) {
      throw_io(description_ + ": tensor '" + entry.name + "' is stored in both '" + files_[position->second].path() +
               "' and '" + file.path() + "'; remove the stale shard");
    }
  }
  files_.push_back(std::move(file));
}

Checkpoint Checkpoint::open(const fs::path& path) {
  Checkpoint checkpoint;
  std::error_code error;
  if (!fs::exists(path, error)) throw_io("'" + path.string() + "' does not exist; pass a .safetensors file, an index or a checkpoint directory");
  checkpoint.description_ = path.string();

  fs::path index_path;
  if (fs::is_directory(path)) {
    checkpoint.directory_ = path;
    if (fs::exists(path / "model.safetensors.index.json")) index_path = path / "model.safetensors.index.json";
  } else {
    checkpoint.directory_ = path.parent_path().empty() ? fs::path(".") : path.parent_path();
    if (path.extension() == ".json") index_path = path;
  }

  if (!index_path.empty()) {
    const std::string text = *read_small_text_file(index_path);
    nlohmann::json index = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (index.is_discarded() || !index.is_object() || !index.contains("weight_map") || !index["weight_map"].is_object()) {
      throw_io(index_path.string() + ": is not a safetensors index (a JSON object with a \"weight_map\" object)");
    }
    std::map<std::string, std::vector<std::string>> tensors_by_shard;
    for (const auto& [tensor, shard] : index["weight_map"].items()) {
      if (!shard.is_string() || !is_safe_shard_name(shard.get<std::string>())) {
        throw_io(index_path.string() + ": tensor '" + tensor + "' maps to a shard that is not a relative file name inside the directory");
      }
      tensors_by_shard[shard.get<std::string>()].push_back(tensor);
    }
    for (const auto& [shard, tensors] : tensors_by_shard) {
      checkpoint.add_file(SafetensorsFile::open((checkpoint.directory_ / shard).string()));
      const SafetensorsFile& file = checkpoint.files_.back();
      for (const std::string& tensor : tensors)
        if (file.header().find(tensor) == nullptr) {
          throw_io(index_path.string() + ": names tensor '" + tensor + "' in '" + file.path() +
                   "', which does not hold it; the index and the shards disagree");
        }
    }
    return checkpoint;
  }

  if (!fs::is_directory(path)) {
    checkpoint.add_file(SafetensorsFile::open(path.string()));
    return checkpoint;
  }
  std::vector<std::string> shards = shards_in_directory(path);
  if (std::find(shards.begin(), shards.end(), "model.safetensors") != shards.end()) shards = {"model.safetensors"};
  if (shards.empty()) throw_io("'" + path.string() + "' holds no .safetensors file and no model.safetensors.index.json");
  for (const std::string& shard : shards) checkpoint.add_file(SafetensorsFile::open((path / shard).string()));
  return checkpoint;
}

std::vector<std::string> Checkpoint::tensor_names() const {
  std::vector<std::string> names;
  names.reserve(where_.size());
  for (const auto& [name, file] : where_) names.push_back(name);
  return names;
}

std::optional<TensorView> Checkpoint::find(const std::string& name) const {
  const auto found = where_.find(name);
  if (found == where_.end()) return std::nullopt;
  return files_[found->second].find(name);
}

TensorView Checkpoint::get(const std::string& name) const {
  const auto found = find(name);
  if (!found) throw_io(description_ + ": has no tensor named '" + name + "'; `fp4gemm inspect` lists what it holds");
  return *found;
}

}  // namespace fp4gemm::io
