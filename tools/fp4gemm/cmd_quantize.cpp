// `fp4gemm quantize`: a BF16/FP16/FP32 safetensors file -> a ModelOpt NVFP4 one, plus the
// hf_quant_config.json that loaders read beside it; or a whole checkpoint directory (sharded or
// not) -> an NVFP4 checkpoint directory. Says, per tensor, what it did and why.
#include <cstdio>
#include <filesystem>
#include <memory>

#include "command.hpp"
#include "fp4gemm/io/quantize_checkpoint.hpp"
#include "fp4gemm/io/quantize_directory.hpp"

namespace fp4gemm::cli {
namespace {

struct QuantizeCommandOptions {
  std::string input;
  std::string output;
  std::vector<std::string> excludes;
  bool no_default_excludes = false;
  bool quiet = false;
};

// Prints what was done to each tensor and why (unless `quiet`); returns how many were quantized.
std::size_t print_decisions(const std::vector<io::QuantizeDecision>& decisions, bool quiet) {
  std::size_t quantized = 0;
  for (const io::QuantizeDecision& decision : decisions) {
    quantized += decision.quantized ? 1 : 0;
    if (!quiet) std::printf("%-9s %s: %s\n", decision.quantized ? "quantized" : "copied", decision.name.c_str(), decision.reason.c_str());
  }
  return quantized;
}

io::QuantizeOptions library_options(const QuantizeCommandOptions& options) {
  io::QuantizeOptions quantize_options;
  quantize_options.exclude_patterns = options.excludes;
  quantize_options.use_default_excludes = !options.no_default_excludes;
  return quantize_options;
}

// A checkpoint directory or index in, a checkpoint directory out.
void run_quantize_directory(const QuantizeCommandOptions& options) {
  const io::Checkpoint input = io::Checkpoint::open(options.input);
  const io::QuantizeDirectoryResult result = io::quantize_checkpoint_directory(input, options.output, library_options(options));
  const std::size_t quantized = print_decisions(result.decisions, options.quiet);
  for (const std::filesystem::path& skipped : result.skipped)
    std::printf("skipped   %s: not a shard of the checkpoint (the index does not name it)\n", skipped.string().c_str());
  std::printf("%zu of %zu tensors quantized to NVFP4 in %zu shard(s); wrote %s (%s%s, %zu other file(s) copied)\n", quantized,
              result.decisions.size(), result.shards.size(), options.output.c_str(), result.index.empty() ? "" : "an index, ",
              result.hf_quant_config.filename().c_str(), result.copied.size());
}

void run_quantize(const QuantizeCommandOptions& options) {
  const std::filesystem::path input(options.input);
  if (std::filesystem::is_directory(input) || input.extension() == ".json") return run_quantize_directory(options);
  const std::filesystem::path output(options.output);
  if (std::filesystem::absolute(output) == std::filesystem::absolute(options.input)) {
    throw_invalid("--out must differ from --in: the input is memory-mapped while the output is written");
  }
  const io::SafetensorsFile input_file = io::SafetensorsFile::open(options.input);
  io::SafetensorsWriter writer;
  const io::QuantizeResult result = io::quantize_checkpoint(input_file, library_options(options), writer);
  std::error_code error;
  if (output.has_parent_path()) std::filesystem::create_directories(output.parent_path(), error);
  if (error) io::throw_io("cannot create the output directory '" + output.parent_path().string() + "': " + error.message());
  writer.write(output.string());
  const std::filesystem::path config_path = (output.has_parent_path() ? output.parent_path() : ".") / "hf_quant_config.json";
  io::write_text_file(config_path, result.hf_quant_config_json);

  const std::size_t quantized = print_decisions(result.decisions, options.quiet);
  std::printf("%zu of %zu tensors quantized to NVFP4; wrote %s and %s\n", quantized, result.decisions.size(),
              output.string().c_str(), config_path.string().c_str());
}

const RegisterCommand registration([](CLI::App& app) {
  auto options = std::make_shared<QuantizeCommandOptions>();
  auto* command = app.add_subcommand(
      "quantize",
      "Quantize the 2-D *.weight tensors (F32/BF16/F16, K % 16 == 0, not excluded) of a safetensors file or a whole "
      "checkpoint directory to ModelOpt NVFP4 (weight, weight_scale, weight_scale_2) and copy every other tensor as-is");
  command->add_option("--in", options->input,
                      "Input .safetensors file, or a checkpoint directory / model.safetensors.index.json (every shard)")
      ->required();
  command->add_option("--out", options->output,
                      "Output .safetensors file (hf_quant_config.json is written beside it); for a directory input, an "
                      "output directory holding no .safetensors file (shards keep their names; the index, "
                      "hf_quant_config.json and the input's other files such as config.json go with them)")
      ->required();
  command->add_option("--exclude", options->excludes,
                      "Module name pattern to keep in high precision ('*' and '?' wildcards; repeatable)");
  command->add_flag("--no-default-excludes", options->no_default_excludes,
                    "Also quantize lm_head, embeddings and MoE routers (left alone by default, as ModelOpt does)");
  command->add_flag("--quiet", options->quiet, "Print only the summary line");
  command->callback([options] { run_quantize(*options); });
});

}  // namespace
}  // namespace fp4gemm::cli
