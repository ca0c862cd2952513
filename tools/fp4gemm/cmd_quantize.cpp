// `fp4gemm quantize`: a BF16/FP16/FP32 safetensors file -> a ModelOpt NVFP4 one, plus the
// hf_quant_config.json that loaders read beside it. Says, per tensor, what it did and why.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>

#include "command.hpp"
#include "fp4gemm/io/quantize_checkpoint.hpp"

namespace fp4gemm::cli {
namespace {

struct QuantizeCommandOptions {
  std::string input;
  std::string output;
  std::vector<std::string> excludes;
  bool no_default_excludes = false;
  bool quiet = false;
};

void write_text(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) io::throw_io("cannot write '" + path.string() + "'; check the output directory");
}

void run_quantize(const QuantizeCommandOptions& options) {
  const std::filesystem::path output(options.output);
  if (std::filesystem::absolute(output) == std::filesystem::absolute(options.input)) {
    throw_invalid("--out must differ from --in: the input is memory-mapped while the output is written");
  }
  const io::SafetensorsFile input = io::SafetensorsFile::open(options.input);
  io::QuantizeOptions quantize_options;
  quantize_options.exclude_patterns = options.excludes;
  quantize_options.use_default_excludes = !options.no_default_excludes;
  io::SafetensorsWriter writer;
  const io::QuantizeResult result = io::quantize_checkpoint(input, quantize_options, writer);
  std::error_code error;
  if (output.has_parent_path()) std::filesystem::create_directories(output.parent_path(), error);
  if (error) io::throw_io("cannot create the output directory '" + output.parent_path().string() + "': " + error.message());
  writer.write(output.string());
  const std::filesystem::path config_path = (output.has_parent_path() ? output.parent_path() : ".") / "hf_quant_config.json";
  write_text(config_path, result.hf_quant_config_json);

  std::size_t quantized = 0;
  for (const io::QuantizeDecision& decision : result.decisions) {
    quantized += decision.quantized ? 1 : 0;
    if (!options.quiet)
      std::printf("%-9s %s: %s\n", decision.quantized ? "quantized" : "copied", decision.name.c_str(), decision.reason.c_str());
  }
  std::printf("%zu of %zu tensors quantized to NVFP4; wrote %s and %s\n", quantized, result.decisions.size(),
              output.string().c_str(), config_path.string().c_str());
}

const RegisterCommand registration([](CLI::App& app) {
  auto options = std::make_shared<QuantizeCommandOptions>();
  auto* command = app.add_subcommand(
      "quantize",
      "Quantize the 2-D *.weight tensors (F32/BF16/F16, K % 16 == 0, not excluded) of a safetensors file to ModelOpt "
      "NVFP4 (weight, weight_scale, weight_scale_2) and copy every other tensor as-is");
  command->add_option("--in", options->input, "Input .safetensors file")->required();
  command->add_option("--out", options->output, "Output .safetensors file (hf_quant_config.json is written beside it)")
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
