// `fp4gemm bench`: time backends and their peers in one run, against a roofline measured in it.
#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/bench.hpp"
#include "bench_model_step.hpp"
#include "bench_moe.hpp"
#include "command.hpp"
#include "fp4gemm/error.hpp"
#include "problem_options.hpp"
#include "type_options.hpp"

namespace fp4gemm::cli {
namespace {

struct BenchOptions {
  // -m and --shapes as typed, one string per occurrence, each a comma-separated list (split here,
  // not by CLI11, whose delimiter drops empty items: "64x256,,48x32" benched two shapes silently).
  std::vector<std::string> m_lists{"1,16,256"};
  std::int64_t n = 12288;
  std::int64_t k = 4096;
  // N x K weight shapes, each benched at every M in one run (one ceiling measurement); when set, they
  // replace -n and -k.
  std::vector<std::string> shape_lists;
  std::string config;  // a model's config.json: its GEMM shapes (io/model_config.hpp), per GPU of `tp`
  int tp = 1;
  std::string backend;  // empty: every backend that can run on the device, except `ref`
  std::string activation = "bf16";
  std::string output = "bf16";
  std::string device = "auto";  // auto: the first GPU if any, else the CPU
  bool json = false;
  bool no_peers = false;
  // A model's decode step (--config with --tokens) or an MoE layer (--moe).
  std::vector<std::string> token_lists;
  int ep = 1;
  bool moe = false;
  // --moe without --config: a layer of these sizes. NOTE: small by default so the CPU bench ends in
  // seconds; the Qwen3.5-397B layer is --experts 512 --topk 10 --hidden 4096 --intermediate 1024.
  bench::MoeBenchShape moe_shape{64, 1024, 512, 0, 8, true};
};

void print_table(const std::vector<bench::Result>& results, const bench::Ceilings& ceilings, const std::string& device) {
  std::printf("device: %s\n", device.c_str());
  std::printf("ceilings: %.1f GB/s (%s); %.3f TFLOP/s (%s)\n", ceilings.bandwidth_gbps, ceilings.bandwidth_method.c_str(),
              ceilings.compute_tflops, ceilings.compute_method.c_str());
  std::printf("%-22s %6s %6s %6s %11s %9s %11s %9s %10s\n", "backend", "M", "N", "K", "us", "TFLOP/s", "weight GB/s",
              "roofline", "x fastest peer");
  for (const bench::Result& result : results) {
    if (!result.ok) {
      std::printf("%-22s %6lld %6lld %6lld  skipped: %s\n", result.backend.c_str(), (long long)result.problem.m,
                  (long long)result.problem.n, (long long)result.problem.k, result.note.c_str());
      continue;
    }
    double fastest_peer = 0;
    for (const bench::Result& other : results)
      if (other.peer && !other.floor && other.ok && other.problem == result.problem)
        fastest_peer = fastest_peer == 0 ? other.time_us : std::min(fastest_peer, other.time_us);
    const double fraction = bench::roofline_us(result.problem, ceilings) / result.time_us;
    char speedup[32] = "-";
    if (!result.peer && fastest_peer > 0) std::snprintf(speedup, sizeof speedup, "%.2fx", fastest_peer / result.time_us);
    std::printf("%-22s %6lld %6lld %6lld %11.1f %9.3f %11.1f %9.3f %10s\n",
                (result.backend + (result.floor ? " (floor)" : result.peer ? " (peer)" : "")).c_str(),
                (long long)result.problem.m, (long long)result.problem.n, (long long)result.problem.k, result.time_us,
                result.tflops(), result.weight_gbps(), fraction, speedup);
  }
  std::printf("roofline = max(minimal bytes / bandwidth, FLOPs / compute rate) / measured time; 1.0 is the limit.\n");
  if (std::any_of(results.begin(), results.end(), [](const bench::Result& result) { return result.floor; })) {
    std::printf("floor = a kernel that only reads the weight bytes, timed the same way: about the least any call can take.\n");
  }
}

void print_json(const std::vector<bench::Result>& results, const bench::Ceilings& ceilings, const std::string& device) {
  for (const bench::Result& result : results) {
    nlohmann::json line{{"device", device},
                        {"backend", result.backend},
                        {"peer", result.peer},
                        {"m", result.problem.m},
                        {"n", result.problem.n},
                        {"k", result.problem.k},
                        {"activation", to_string(result.problem.activation)},
                        {"output", to_string(result.problem.output)},
                        {"ok", result.ok},
                        {"note", result.note}};
    if (result.floor) line["floor"] = true;
    if (!result.kernel.empty()) line["kernel"] = result.kernel;
    if (result.resident_bytes >= 0) line["resident_bytes"] = result.resident_bytes;
    if (result.dense_copy) line["dense_copy"] = true;
    if (result.ok) {
      line["time_us"] = result.time_us;
      line["tflops"] = result.tflops();
      line["weight_gbps"] = result.weight_gbps();
      line["roofline_us"] = bench::roofline_us(result.problem, ceilings);
      line["roofline_fraction"] = bench::roofline_us(result.problem, ceilings) / result.time_us;
      line["spread"] = result.spread;
      line["repeats"] = result.repeats;
    }
    line["bandwidth_gbps"] = ceilings.bandwidth_gbps;
    line["compute_tflops"] = ceilings.compute_tflops;
    std::printf("%s\n", line.dump().c_str());
  }
}

// Token counts from --tokens (whole numbers >= 1), or `fallback` when none are given.
std::vector<std::int64_t> token_counts(const BenchOptions& options, const std::string& fallback) {
  return parse_m_list(options.token_lists.empty() ? std::vector<std::string>{fallback} : options.token_lists);
}

void run_bench(const BenchOptions& options) {
  if (options.moe) {
    MoeBenchRequest request;
    request.shape = options.config.empty() ? options.moe_shape : moe_shape_from_config(options.config, options.tp, options.ep);
    request.tokens = token_counts(options, "1,8,64,512");
    request.backend = options.backend;
    request.device = options.device;
    request.json = options.json;
    request.no_peers = options.no_peers;
    return run_moe_bench(request);
  }
  if (!options.token_lists.empty()) {
    if (options.config.empty()) throw_invalid("--tokens needs --config (a model's decode step) or --moe (an MoE layer)");
    return run_model_step_report({options.config, options.tp, options.ep, token_counts(options, ""), options.backend, options.device,
                                  options.json, options.no_peers});
  }
  if (options.ep != 1) throw_invalid("--ep needs --tokens or --moe: it splits the experts of a model's step or MoE layer");
  std::vector<WeightShape> shapes;
  if (!options.config.empty()) shapes = config_shapes(options.config, options.tp, "bench");
  if (options.shape_lists.empty() && options.config.empty()) {
    shapes.push_back({options.n, options.k});
    check_weight_shape(shapes.back(), "-n/-k");
  }
  for (const std::string& text : list_items(options.shape_lists, "--shapes")) shapes.push_back(parse_weight_shape(text));
  const std::vector<std::int64_t> ms = parse_m_list(options.m_lists);
  const ActivationType activation = parse_activation(options.activation);
  const DType output = parse_output(options.output);
  std::vector<GemmProblem> problems;  // shape by shape (the GPU bench then makes each weight once)
  for (const WeightShape& shape : shapes)
    for (std::int64_t m : ms) problems.push_back({m, shape.n, shape.k, activation, output});
  const BenchRun run = run_benchmark(options.device, problems, options.backend, options.no_peers);
  if (options.json) {
    print_json(run.results, run.ceilings, run.device_name);
  } else {
    print_table(run.results, run.ceilings, run.device_name);
  }
}

const RegisterCommand registration([](CLI::App& app) {
  auto options = std::make_shared<BenchOptions>();
  auto* command = app.add_subcommand("bench", "Time backends and peers on weight shapes against a measured roofline");
  command->add_option("-m", options->m_lists, "Activation rows, comma-separated (default 1,16,256)");
  auto* n = command->add_option("-n", options->n, "Weight rows N (default 12288)");
  auto* k = command->add_option("-k", options->k, "Reduction size K, a multiple of 16 (default 4096)");
  command->add_option("--shapes", options->shape_lists, "Weight shapes NxK, comma-separated (e.g. 4096x4096,28672x8192), instead of -n/-k")
      ->excludes(n)
      ->excludes(k);
  auto* config = add_model_config_options(command, options->config, options->tp,
                                          "bench its GEMM shapes as engines run them, instead of -n/-k (with or instead of --shapes)");
  config->excludes(n)
      ->excludes(k);
  command->add_option("--backend", options->backend, "Only this backend (default: all that can run, except ref)");
  command->add_option("--activation", options->activation, "bf16 (W4A16, default), f32 or nvfp4 (W4A4)");
  command->add_option("--output", options->output, "bf16 (default), f16 or f32");
  command->add_option("--device", options->device, "auto (default: the first GPU, else the CPU), cpu, I or cuda:I");
  command->add_flag("--json", options->json, "One JSON object per result line");
  command->add_flag("--no-peers", options->no_peers, "Skip the peer libraries (OpenBLAS, cuBLAS) and the GPU stream floor");
  command->add_option("--tokens", options->token_lists,
                      "Token counts, comma-separated: with --config, a decode step of the model at each (every NVFP4 GEMM and MoE "
                      "layer, times its count per step); with --moe, the MoE layer at each (default 1,8,64,512)");
  command->add_option("--ep", options->ep, "Expert parallelism: the experts split over this many GPUs (with --tokens or --moe)")
      ->check(CLI::PositiveNumber);
  auto* moe = command->add_flag("--moe", options->moe,
                                "Time an MoE layer (random NVFP4 experts, uniform random routing) beside its peers (OpenBLAS on the CPU; cuBLAS BF16 "
                                "grouped and cuBLASLt FP8 on a GPU); its "
                                "shape from --config or --experts/--topk/--hidden/--intermediate");
  add_moe_layer_options(command, options->moe_shape, moe, config);
  command->add_option("--shared-intermediate", options->moe_shape.shared_intermediate,
                      "Shared expert intermediate size (default 0: none)")
      ->needs(moe)
      ->excludes(config);
  command->callback([options] { run_bench(*options); });
});

}  // namespace
}  // namespace fp4gemm::cli
