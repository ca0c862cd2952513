#pragma once
// A checkpoint: one safetensors file, or the shards a `model.safetensors.index.json` names, seen
// as one map from tensor name to a zero-copy view.
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "fp4gemm/io/safetensors.hpp"

namespace fp4gemm::io {

class Checkpoint {
 public:
  // `path` is a .safetensors file, a *.index.json, or a directory holding either
  // model.safetensors.index.json, model.safetensors, or (failing both) *.safetensors shards.
  // Every shard is opened and validated; an index entry whose shard lacks the tensor, a shard
  // path leaving the directory, or a tensor held by two shards is an Error(io).
  static Checkpoint open(const std::filesystem::path& path);

  const std::filesystem::path& directory() const { return directory_; }  // where config files live
  const std::string& description() const { return description_; }        // for messages
  const std::vector<SafetensorsFile>& files() const { return files_; }
  std::vector<std::string> tensor_names() const;  // sorted
  std::size_t tensor_count() const { return where_.size(); }

  std::optional<TensorView> find(const std::string& name) const;
  TensorView get(const std::string& name) const;  // throws Error(io) naming the checkpoint

 private:
  void add_file(SafetensorsFile file);
  std::filesystem::path directory_;
  std::string description_;
  std::vector<SafetensorsFile> files_;
  std::map<std::string, std::size_t> where_;  // tensor name -> index into files_
};

// Reads a small JSON file (config.json, hf_quant_config.json, an index) into a string, with a
// size bound; throws Error(io) naming it. Empty optional when the file does not exist.
std::optional<std::string> read_small_text_file(const std::filesystem::path& path);

// Writes `text` to `path` (replacing it); throws Error(io) naming `what` (e.g. "the tuned profile",
// or empty) and the path.
void write_text_file(const std::filesystem::path& path, const std::string& text, const std::string& what = "");

}  // namespace fp4gemm::io
