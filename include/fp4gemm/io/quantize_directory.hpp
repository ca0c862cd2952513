#pragma once
// A whole checkpoint directory (one file or the shards of a model.safetensors.index.json) ->
// a ModelOpt NVFP4 checkpoint directory that loaders take as it is.
#include <filesystem>
#include <string>
#include <vector>

#include "fp4gemm/io/checkpoint.hpp"
#include "fp4gemm/io/quantize_checkpoint.hpp"

namespace fp4gemm::io {

struct QuantizeDirectoryResult {
  std::vector<QuantizeDecision> decisions;        // every input tensor, shard by shard, each in name order
  std::vector<std::string> excluded_modules;      // linear modules left in high precision, all shards (sorted)
  std::vector<std::filesystem::path> shards;      // the quantized shards written, in input order
  std::filesystem::path index;                    // the index written, or empty (a single shard without one)
  std::filesystem::path hf_quant_config;          // hf_quant_config.json
  std::vector<std::filesystem::path> copied;      // the input directory's other files, copied as they are
  std::vector<std::filesystem::path> skipped;     // .safetensors files of the input directory outside the
                                                  // checkpoint (e.g. a consolidated copy the index does not name)
};

// Quantizes every shard of `input` (quantize_checkpoint, one shard in memory at a time) into
// `output_directory` under the shard's own file name. Writes model.safetensors.index.json for the
// output's tensors when the input has several shards or an index, one hf_quant_config.json for all
// shards, and copies the input directory's other regular files (config.json, tokenizer files, ...)
// unchanged. `output_directory` is created if missing; it must not be the input's directory and must
// hold no .safetensors file (stale shards would mix with new ones): Error(invalid_argument).
QuantizeDirectoryResult quantize_checkpoint_directory(const Checkpoint& input, const std::filesystem::path& output_directory,
                                                      const QuantizeOptions& options);

}  // namespace fp4gemm::io
