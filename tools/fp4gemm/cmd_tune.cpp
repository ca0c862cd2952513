// `fp4gemm tune`: time every backend that can run here (and the peer libraries beside them) on a
// model's GEMM shapes over a range of M, write the tuned profile that makes the runner pick the
// fastest, and say for each problem what won, by how much, and what `auto` would have picked.
// With --moe, an MoE layer's backends over token counts instead (tune_moe.hpp).
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench_moe.hpp"
#include "command.hpp"
#include "problem_options.hpp"
#include "tune/tune.hpp"
#include "tune_moe.hpp"
#include "type_options.hpp"
#include "fp4gemm/io/checkpoint.hpp"
#include "fp4gemm/io/checkpoint_summary.hpp"
#include "fp4gemm/io/modelopt.hpp"
#include "fp4gemm/runner.hpp"

namespace fp4gemm::cli {
namespace {

// Decode (1-64) densely around the kernel switches, then prefill sizes. On a CPU the large ones
// would take minutes per shape, so the CPU default stops at 128.
constexpr const char* kGpuDefaultMs = "1,2,4,8,16,24,32,48,64,128,256,512,1024,2048,4096";
constexpr const char* kCpuDefaultMs = "1,2,4,8,16,32,64,128";
constexpr const char* kMoeDefaultTokens = "1,8,64";

struct TuneOptions {
  std::string checkpoint;
  std::string config;
  int tp = 1;
  std::vector<std::string> shape_lists;
  std::vector<std::string> m_lists;  // empty: the device's default
  std::string activation = "bf16";
  std::string device = "auto";
  std::string out;
  bool no_peers = false;
  bool json = false;
  bool moe = false;
  bench::MoeBenchShape moe_shape{64, 1024, 512, 0, 8, true};  // --moe without --config: bench --moe's default
  std::vector<std::string> token_lists;
};

// The checkpoint's NVFP4 GEMM shapes, the config's and the --shapes ones, each once, in (n, k) order.
std::vector<WeightShape> shapes_to_tune(const TuneOptions& options) {
  std::set<std::pair<std::int64_t, std::int64_t>> unique;
  if (!options.config.empty()) {
    for (const WeightShape& shape : config_shapes(options.config, options.tp, "tune")) unique.insert({shape.n, shape.k});
  }
  if (!options.checkpoint.empty()) {
    const io::Checkpoint checkpoint = io::Checkpoint::open(options.checkpoint);
    const io::CheckpointSummary summary = io::summarize_checkpoint(checkpoint, io::read_quant_config(checkpoint.directory()));
    if (summary.shapes.empty()) {
      throw_invalid("--checkpoint " + options.checkpoint + ": holds no NVFP4 layer to tune for; `fp4gemm inspect` shows what it holds");
    }
    for (const auto& shape : summary.shapes) {
      check_weight_shape({shape.n, shape.k}, "--checkpoint layer shape " + std::to_string(shape.n) + "x" + std::to_string(shape.k));
      unique.insert({shape.n, shape.k});
    }
  }
  for (const std::string& text : list_items(options.shape_lists, "--shapes")) {
    const WeightShape shape = parse_weight_shape(text);
    unique.insert({shape.n, shape.k});
  }
  if (unique.empty()) throw_invalid("give --checkpoint, --config or --shapes: there is nothing to tune for");
  std::vector<WeightShape> shapes;
  for (const auto& [n, k] : unique) shapes.push_back({n, k});
  return shapes;
}

// What the runner's auto order picks for each problem on the benchmarked device (no profile, no
// environment, no canary: the choice alone).
std::map<std::string, std::string> auto_choices(const std::vector<tune::Choice>& choices, const DeviceInfo& device) {
  RunnerOptions options;
  options.backend = "auto";
  options.device = device.is_cuda() ? device.index : RunnerOptions::kCpuOnly;
  options.environment = [](const std::string&) -> std::optional<std::string> { return std::nullopt; };
  options.canary = false;
  Runner runner(std::move(options));
  std::map<std::string, std::string> picks;
  for (const tune::Choice& choice : choices) picks[choice.problem.to_string()] = runner.explain(choice.problem).choice;
  return picks;
}

double time_of(const std::vector<bench::Result>& results, const GemmProblem& problem, const std::string& backend) {
  for (const bench::Result& result : results)
    if (result.ok && !result.peer && result.backend == backend && result.problem == problem) return result.time_us;
  return 0;
}

void run_tune(const TuneOptions& options) {
  if (options.moe) {
    if (options.device != "cpu" && options.device != "auto") {
      throw_invalid("--device " + options.device + ": the MoE layer runs on the CPU in this build (cpu or auto)");
    }
    MoeTuneRequest request;
    request.shape = options.config.empty() ? options.moe_shape : moe_shape_from_config(options.config, options.tp, 1);
    request.tokens = parse_m_list(options.token_lists.empty() ? std::vector<std::string>{kMoeDefaultTokens} : options.token_lists);
    request.out = options.out;
    request.json = options.json;
    return run_moe_tune(request);
  }
  const std::vector<WeightShape> shapes = shapes_to_tune(options);
  const bool gpu = resolves_to_gpu(options.device);
  const std::vector<std::int64_t> ms =
      parse_m_list(options.m_lists.empty() ? std::vector<std::string>{gpu ? kGpuDefaultMs : kCpuDefaultMs} : options.m_lists);
  const ActivationType activation = parse_activation(options.activation);
  std::vector<GemmProblem> problems;
  for (const WeightShape& shape : shapes)
    for (std::int64_t m : ms) problems.push_back({m, shape.n, shape.k, activation, DType::bf16});

  const BenchRun run = run_benchmark(options.device, problems, "", options.no_peers);
  const std::vector<tune::Choice> choices = tune::choose_fastest(run.results);
  if (choices.empty()) throw Error(ErrorCode::unsupported, "no backend ran any of the problems on " + run.device_name);
  const std::map<std::string, std::string> auto_picks = auto_choices(choices, run.device);
  const dispatch::TunedProfile profile = tune::make_profile(choices, dispatch::metadata_for(run.device));
  io::write_text_file(options.out, profile.to_json() + "\n", "the tuned profile");

  int beats_auto = 0;
  double best_gain = 1.0;
  if (!options.json) {
    std::printf("device: %s\n", run.device_name.c_str());
    std::printf("%6s %6s %6s  %-20s %9s  %-20s %9s  %-20s %9s %7s  %-14s %9s\n", "M", "N", "K", "tuned", "us", "runner-up", "us",
                "auto picks", "us", "x auto", "fastest peer", "us");
  }
  for (const tune::Choice& choice : choices) {
    const std::string auto_pick = auto_picks.at(choice.problem.to_string());
    const double auto_us = time_of(run.results, choice.problem, auto_pick);
    const double gain = auto_us > 0 ? auto_us / choice.time_us : 0;
    if (auto_pick != choice.backend && gain > 1.0) ++beats_auto, best_gain = std::max(best_gain, gain);
    if (options.json) {
      nlohmann::json line{{"m", choice.problem.m},           {"n", choice.problem.n},
                          {"k", choice.problem.k},           {"activation", to_string(choice.problem.activation)},
                          {"tuned", choice.backend},         {"tuned_us", choice.time_us},
                          {"runner_up", choice.runner_up},   {"runner_up_us", choice.runner_up_us},
                          {"auto", auto_pick},               {"auto_us", auto_us},
                          {"fastest_peer", choice.fastest_peer}, {"fastest_peer_us", choice.fastest_peer_us}};
      std::printf("%s\n", line.dump().c_str());
      continue;
    }
    char auto_time[16] = "-", auto_ratio[16] = "-", runner_time[16] = "-", peer_time[16] = "-";
    if (auto_us > 0) std::snprintf(auto_time, sizeof auto_time, "%.1f", auto_us), std::snprintf(auto_ratio, sizeof auto_ratio, "%.2fx", gain);
    if (!choice.runner_up.empty()) std::snprintf(runner_time, sizeof runner_time, "%.1f", choice.runner_up_us);
    if (!choice.fastest_peer.empty()) std::snprintf(peer_time, sizeof peer_time, "%.1f", choice.fastest_peer_us);
    std::printf("%6lld %6lld %6lld  %-20s %9.1f  %-20s %9s  %-20s %9s %7s  %-14s %9s\n", (long long)choice.problem.m,
                (long long)choice.problem.n, (long long)choice.problem.k, choice.backend.c_str(), choice.time_us,
                choice.runner_up.empty() ? "-" : choice.runner_up.c_str(), runner_time, auto_pick.empty() ? "(none)" : auto_pick.c_str(),
                auto_time, auto_ratio, choice.fastest_peer.empty() ? "-" : choice.fastest_peer.c_str(), peer_time);
  }
  if (!options.json) {
    std::printf("x auto = auto's pick's time / the tuned backend's time, both measured in this run (1.00x: auto picks it too).\n");
  }
  std::fprintf(options.json ? stderr : stdout,
               "wrote %s: %zu entries for %zu shape(s) x %zu M; the tuned pick beats auto's on %d of %zu problems (up to %.2fx). "
               "Use it with `fp4gemm explain --profile %s` or RunnerOptions::profile_path; M above %lld keeps auto's order.\n",
               options.out.c_str(), profile.entries.size(), shapes.size(), ms.size(), beats_auto, choices.size(), best_gain,
               options.out.c_str(), (long long)*std::max_element(ms.begin(), ms.end()));
}

const RegisterCommand registration([](CLI::App& app) {
  auto options = std::make_shared<TuneOptions>();
  auto* command = app.add_subcommand(
      "tune", "Time every backend (and the peers) on a model's GEMM shapes over M and write the tuned profile that picks the fastest");
  command->add_option("--checkpoint", options->checkpoint, "Checkpoint whose NVFP4 layers' shapes to tune (file, index or directory)");
  auto* config = add_model_config_options(command, options->config, options->tp,
                           "tune its GEMM shapes as engines run them (fused qkv and gate_up), without its weights");
  command->add_option("--shapes", options->shape_lists, "Weight shapes NxK, comma-separated (with or instead of --checkpoint, --config)");
  command->add_option("-m", options->m_lists,
                      std::string("Activation rows, comma-separated (default ") + kGpuDefaultMs + " on a GPU, " + kCpuDefaultMs + " on a CPU)");
  command->add_option("--activation", options->activation, "bf16 (W4A16, default), f32 or nvfp4 (W4A4)");
  command->add_option("--device", options->device, "auto (default: the first GPU, else the CPU), cpu, I or cuda:I");
  command->add_option("--out", options->out, "The tuned profile to write (JSON)")->required();
  command->add_flag("--no-peers", options->no_peers, "Skip the peer libraries (cuBLAS BF16 / cuBLASLt FP8, OpenBLAS)");
  command->add_flag("--json", options->json, "One JSON object per problem (the summary goes to stderr)");
  auto* moe = command->add_flag("--moe", options->moe,
                                "Tune an MoE layer (random NVFP4 experts, uniform random routing) instead of GEMM shapes: its "
                                "shape from --config or --experts/--topk/--hidden/--intermediate, over --tokens");
  add_moe_layer_options(command, options->moe_shape, moe, config);
  command->add_option("--tokens", options->token_lists, std::string("Token counts of the --moe layer, comma-separated (default ") +
                                                            kMoeDefaultTokens + ")")
      ->needs(moe);
  command->callback([options] { run_tune(*options); });
});

}  // namespace
}  // namespace fp4gemm::cli
