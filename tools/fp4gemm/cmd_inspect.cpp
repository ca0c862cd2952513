// `fp4gemm inspect PATH`: what a checkpoint holds — quant config, tensors and bytes per class, the
// distinct GEMM shapes of its NVFP4 layers — and, with --tensors, every tensor with a CRC-32.
#include <array>
#include <cstdio>
#include <memory>

#include <nlohmann/json.hpp>

#include "command.hpp"
#include "fp4gemm/io/checkpoint_summary.hpp"

namespace fp4gemm::cli {
namespace {

struct InspectOptions {
  std::string path;
  bool json = false;
  bool tensors = false;
};

// CRC-32 (the zlib polynomial), so a listing can be compared with Python's zlib.crc32.
std::uint32_t crc32(std::span<const std::uint8_t> bytes) {
  static const std::array<std::uint32_t, 256> table = [] {
    std::array<std::uint32_t, 256> entries{};
    for (std::uint32_t i = 0; i < 256; ++i) {
      std::uint32_t value = i;
      for (int bit = 0; bit < 8; ++bit) value = (value & 1) ? 0xEDB88320u ^ (value >> 1) : value >> 1;
      entries[i] = value;
    }
    return entries;
  }();
  std::uint32_t crc = 0xFFFFFFFFu;
  for (std::uint8_t byte : bytes) crc = table[(crc ^ byte) & 0xFF] ^ (crc >> 8);
  return crc ^ 0xFFFFFFFFu;
}

// One entry per MoE layer: its experts, routing and shared expert.
nlohmann::ordered_json moe_layers_json(const io::CheckpointSummary& summary) {
  nlohmann::ordered_json layers = nlohmann::ordered_json::array();
  const io::MoeRoutingConfig& routing = summary.moe_routing;
  for (const io::MoeLayerShape& layer : summary.moe_layers) {
    layers.push_back({{"prefix", layer.prefix},
                      {"experts", layer.experts},
                      {"hidden", layer.hidden},
                      {"intermediate", layer.intermediate},
                      {"layout", moe::to_string(layer.layout)},
                      {"top_k", routing.num_experts_per_tok ? nlohmann::ordered_json(*routing.num_experts_per_tok) : nullptr},
                      {"norm_topk_prob", routing.norm_topk_prob ? nlohmann::ordered_json(*routing.norm_topk_prob) : nullptr},
                      {"router", layer.router},
                      {"shared_expert", layer.shared},
                      {"shared_intermediate", layer.shared_intermediate},
                      {"shared_expert_gate", layer.shared_gate}});
  }
  return layers;
}

void print_moe_layers(const nlohmann::ordered_json& layers) {
  if (layers.empty()) return;
  std::printf("\nMoE layers (%zu): experts x [H, I], top-k, expert layout, router, shared expert\n", layers.size());
  for (const auto& layer : layers) {
    const std::string k = layer["top_k"].is_null() ? "k ?" : "k " + layer["top_k"].dump();
    std::string shared = layer["shared_expert"].get<std::string>();
    if (shared != "none") {
      shared += " [I " + layer["shared_intermediate"].dump() + "]" + (layer["shared_expert_gate"].get<bool>() ? " gated" : "");
    }
    std::printf("  %-40s %5lld x [%lld, %lld]  %-6s %-10s %-9s shared %s\n", layer["prefix"].get<std::string>().c_str(),
                (long long)layer["experts"], (long long)layer["hidden"], (long long)layer["intermediate"], k.c_str(),
                layer["layout"].get<std::string>().c_str(), layer["router"].get<bool>() ? "router" : "no router", shared.c_str());
  }
}

nlohmann::ordered_json to_json(const io::CheckpointSummary& summary, const io::Checkpoint& checkpoint, bool with_tensors) {
  nlohmann::ordered_json report;
  report["path"] = checkpoint.description();
  const io::QuantConfig& config = summary.config;
  report["quant_config"] = config.found ? nlohmann::ordered_json{{"source", config.source},
                                                                  {"quant_method", config.quant_method},
                                                                  {"quant_algo", config.quant_algo},
                                                                  {"group_size", config.group_size},
                                                                  {"exclude_modules", config.exclude_modules}}
                                        : nlohmann::ordered_json(nullptr);
  report["files"] = summary.files;
  report["tensors"] = summary.tensors;
  report["bytes"] = summary.bytes;
  report["nvfp4_layers"] = {{"total", summary.nvfp4_layers},
                            {"modelopt", summary.modelopt_layers},
                            {"compressed_tensors", summary.compressed_tensors_layers},
                            {"with_input_scale", summary.layers_with_input_scale}};
  for (const auto& [tensor_class, totals] : summary.classes) {
    report["classes"][io::to_string(tensor_class)] = {
        {"tensors", totals.tensors}, {"bytes", totals.bytes}, {"nvfp4_layers", totals.nvfp4_layers}};
  }
  report["moe_layers"] = moe_layers_json(summary);
  report["gemm_shapes"] = nlohmann::ordered_json::array();
  for (const io::GemmShape& shape : summary.shapes)
    report["gemm_shapes"].push_back({{"n", shape.n}, {"k", shape.k}, {"count", shape.count}, {"classes", shape.classes}});
  if (with_tensors) {
    for (const std::string& name : checkpoint.tensor_names()) {
      const io::TensorView tensor = checkpoint.get(name);
      report["tensor_list"].push_back({{"name", name},
                                       {"dtype", io::to_string(tensor.dtype())},
                                       {"shape", tensor.shape()},
                                       {"bytes", tensor.entry->byte_size()},
                                       {"crc32", crc32(tensor.bytes())}});
    }
  }
  return report;
}

void print_text(const nlohmann::ordered_json& report) {
  std::printf("checkpoint: %s (%lld file(s), %lld tensors, %.1f MiB)\n", report["path"].get<std::string>().c_str(),
              (long long)report["files"], (long long)report["tensors"], report["bytes"].get<double>() / (1 << 20));
  const auto& config = report["quant_config"];
  if (config.is_null()) {
    std::printf("quant config: none (no hf_quant_config.json, no quantization_config in config.json)\n");
  } else {
    std::printf("quant config: %s: method %s, algo %s, group size %d, %zu exclude pattern(s)\n",
                config["source"].get<std::string>().c_str(), config["quant_method"].get<std::string>().c_str(),
                config["quant_algo"].get<std::string>().c_str(), config["group_size"].get<int>(), config["exclude_modules"].size());
    for (const auto& pattern : config["exclude_modules"]) std::printf("  exclude: %s\n", pattern.get<std::string>().c_str());
  }
  const auto& layers = report["nvfp4_layers"];
  std::printf("NVFP4 layers: %lld (modelopt %lld, compressed-tensors %lld; %lld with input_scale)\n\n",
              (long long)layers["total"], (long long)layers["modelopt"], (long long)layers["compressed_tensors"],
              (long long)layers["with_input_scale"]);
  std::printf("%-20s %9s %14s %12s\n", "class", "tensors", "bytes", "nvfp4 layers");
  for (const auto& [name, totals] : report["classes"].items()) {
    std::printf("%-20s %9lld %14lld %12lld\n", name.c_str(), (long long)totals["tensors"], (long long)totals["bytes"],
                (long long)totals["nvfp4_layers"]);
  }
  print_moe_layers(report["moe_layers"]);
  std::printf("\nGEMM shapes (N x K: count, classes):\n");
  if (report["gemm_shapes"].empty()) std::printf("  none: no NVFP4 layers\n");
  for (const auto& shape : report["gemm_shapes"]) {
    std::string classes;
    for (const auto& name : shape["classes"]) classes += (classes.empty() ? "" : ", ") + name.get<std::string>();
    std::printf("  %6lld x %-6lld %6lld  %s\n", (long long)shape["n"], (long long)shape["k"], (long long)shape["count"],
                classes.c_str());
  }
  if (report.contains("tensor_list")) {
    std::printf("\n%-60s %-8s %-20s %12s %10s\n", "tensor", "dtype", "shape", "bytes", "crc32");
    for (const auto& tensor : report["tensor_list"]) {
      std::printf("%-60s %-8s %-20s %12llu %08x\n", tensor["name"].get<std::string>().c_str(),
                  tensor["dtype"].get<std::string>().c_str(), tensor["shape"].dump().c_str(),
                  (unsigned long long)tensor["bytes"], tensor["crc32"].get<std::uint32_t>());
    }
  }
}

void run_inspect(const InspectOptions& options) {
  const io::Checkpoint checkpoint = io::Checkpoint::open(options.path);
  const io::QuantConfig config = io::read_quant_config(checkpoint.directory());
  const io::CheckpointSummary summary = io::summarize_checkpoint(checkpoint, config);
  const nlohmann::ordered_json report = to_json(summary, checkpoint, options.tensors);
  if (options.json) {
    std::printf("%s\n", report.dump(2).c_str());
  } else {
    print_text(report);
  }
}

const RegisterCommand registration([](CLI::App& app) {
  auto options = std::make_shared<InspectOptions>();
  auto* command = app.add_subcommand("inspect", "Show a checkpoint's quant config, tensors per class and GEMM shapes");
  command->add_option("path", options->path, "A .safetensors file, a model.safetensors.index.json, or a checkpoint directory")
      ->required();
  command->add_flag("--json", options->json, "Print one JSON document");
  command->add_flag("--tensors", options->tensors, "Also list every tensor with its dtype, shape and CRC-32");
  command->callback([options] { run_inspect(*options); });
});

}  // namespace
}  // namespace fp4gemm::cli
