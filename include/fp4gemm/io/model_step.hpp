#pragma once
// One decode step of a model as a list of its NVFP4 GEMMs and MoE layers, each with how many
// times a step runs it, from config.json alone (io/model_config.hpp's shapes, plus layer counts):
// what `fp4gemm bench --config --tokens` times to report a step.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "fp4gemm/io/model_config.hpp"

namespace fp4gemm::io {

// A GEMM shape of the step, per GPU, and how many layers run it once per step.
struct StepGemm {
  std::string kind;  // "attention", "linear attention", "dense MLP", "shared expert"
  ModelGemm gemm;
  std::int64_t count = 0;
};

// The routed experts of one MoE layer as each GPU runs them: with expert parallelism of `ep` GPUs
// each holds experts / ep whole experts and serves, on average, top_k / ep of each token's
// experts (rounded up); without it, tensor parallelism splits every expert's intermediate size.
struct StepMoe {
  std::int64_t experts = 0, hidden = 0, intermediate = 0;
  int top_k = 0;
  bool norm_topk_prob = true;
  std::string norm_topk_prob_origin;  // "config.json" or the model type's default (default_norm_topk_prob)
  std::int64_t count = 0;  // MoE layers per step
};

struct ModelStep {
  std::string model_type;
  std::int64_t layers = 0;  // num_hidden_layers
  int tp = 1, ep = 1;
  std::vector<StepGemm> gemms;
  std::optional<StepMoe> moe;
};

// From config.json's text (the top level or its text_config). Needs num_hidden_layers; hybrid
// models count their full-attention layers from layer_types, else full_attention_interval
// (default 4). Error(io) naming `where` for missing or bad fields; Error(invalid_argument) when
// tp or ep is below 1 or does not divide what it splits.
ModelStep step_from_config_text(const std::string& text, const std::string& where, int tp = 1, int ep = 1);
ModelStep step_from_config(const std::filesystem::path& path, int tp = 1, int ep = 1);

}  // namespace fp4gemm::io
