// `fp4gemm tune --moe`: times each MoE backend through the MoE runner (as `bench --moe` does) at
// each token count and writes one "moe" entry per run of token counts with the same winner.
#include "tune_moe.hpp"

#include <algorithm>
#include <cstdio>
#include <map>

#include <nlohmann/json.hpp>

#include "bench_moe.hpp"
#include "fp4gemm/dispatch/profile.hpp"
#include "fp4gemm/error.hpp"
#include "fp4gemm/io/checkpoint.hpp"
#include "fp4gemm/moe/moe_runner.hpp"

namespace fp4gemm::cli {
namespace {

// `ref` is the FP64 oracle on one thread: about 4 ns per multiply-add on the 2-core EPYC (E=64 k=8
// H=1024 I=512 T=1: ref 53 ms, cpu 0.32 ms), so above this T·k·H·I (3 GEMMs of it, ~100 ms a call
// and several calls per timing) it would take most of a tune run for a backend that never wins.
constexpr std::int64_t kRefTuneMaxMacs = std::int64_t{1} << 23;

std::string ref_skip_reason(const bench::MoeBenchShape& shape, std::int64_t tokens) {
  const std::int64_t macs = tokens * shape.top_k * shape.hidden * shape.intermediate;
  if (macs <= kRefTuneMaxMacs) return "";
  return "skipped: ref (the FP64 oracle, one thread) is not timed above T*k*H*I = " + std::to_string(kRefTuneMaxMacs) +
         " (this is " + std::to_string(macs) + ")";
}

struct MoeTiming {
  std::string backend;
  double time_us = 0;
  std::string note;  // why it was not timed, or what failed
};

}  // namespace

void run_moe_tune(const MoeTuneRequest& request) {
  bench::check_moe_bench_shape(request.shape);
  if (request.out.empty()) throw_invalid("give --out: the tuned profile to write");
  const DeviceInfo cpu = probe_cpu();
  const bench::MoeBenchLayer layer(request.shape);
  dispatch::TunedProfile profile;
  profile.origin = "<tuned>";
  profile.metadata = dispatch::metadata_for(cpu);
  const dispatch::MoeProfileShape key{request.shape.experts, request.shape.top_k, request.shape.hidden,
                                      request.shape.intermediate, ActivationType::bf16};
  if (!request.json) std::printf("device: %s\nlayer:  %s\n", cpu.to_string().c_str(), request.shape.to_string().c_str());

  // Each backend once over the token counts it may run, so its layout is made once.
  std::map<std::int64_t, std::vector<MoeTiming>> by_tokens;
  for (const auto& candidate : moe::make_all_moe_backends()) {
    const std::string backend = candidate->name();
    if (candidate->memory() != Memory::host) {  // the layer's operands are host buffers
      for (std::int64_t tokens : request.tokens) by_tokens[tokens].push_back({backend, 0, "takes operands in GPU memory; not timed here"});
      continue;
    }
    std::vector<std::int64_t> timed;
    for (std::int64_t tokens : request.tokens) {
      const std::string reason = backend == "ref" ? ref_skip_reason(request.shape, tokens) : "";
      if (reason.empty()) timed.push_back(tokens);
      else by_tokens[tokens].push_back({backend, 0, reason});
    }
    if (timed.empty()) continue;
    for (const bench::MoeResult& result : time_moe_layer(layer, timed, backend, false, false).results)
      by_tokens[result.tokens].push_back({backend, result.ok ? result.time_us : 0, result.ok ? "" : "failed: " + result.note});
  }

  std::vector<std::pair<std::int64_t, std::string>> winners;  // per token count, ascending
  for (const auto& [tokens, timings] : by_tokens) {
    const MoeTiming* best = nullptr;
    for (const MoeTiming& timing : timings)
      if (timing.time_us > 0 && (best == nullptr || timing.time_us < best->time_us)) best = &timing;
    for (const MoeTiming& timing : timings) {
      if (request.json) {
        nlohmann::json line{{"tokens", tokens}, {"backend", timing.backend}, {"us", timing.time_us},
                            {"tuned", best == &timing}, {"note", timing.note}};
        std::printf("%s\n", line.dump().c_str());
        continue;
      }
      char time[32] = "-";
      if (timing.time_us > 0) std::snprintf(time, sizeof time, "%.1f us", timing.time_us);
      const std::string note = best == &timing ? "<- tuned" : timing.note;
      std::printf("T=%-6lld %-8s %14s  %s\n", (long long)tokens, timing.backend.c_str(), time, note.c_str());
    }
    if (best != nullptr) winners.emplace_back(tokens, best->backend);
  }
  if (winners.empty()) throw Error(ErrorCode::unsupported, "no MoE backend ran the layer " + request.shape.to_string() + " here");
  for (std::size_t i = 0; i < winners.size(); ++i) {
    // A run of token counts with one winner is one entry, up to the run's last count.
    if (i + 1 < winners.size() && winners[i + 1].second == winners[i].second) continue;
    profile.moe_entries.push_back({winners[i].first, key, winners[i].second});
  }
  io::write_text_file(request.out, profile.to_json() + "\n", "the tuned profile");
  std::fprintf(request.json ? stderr : stdout,
               "wrote %s: %zu moe entries for %s over %zu token count(s). Use it with `fp4gemm moe --profile %s` or "
               "MoeRunnerOptions::profile_path; T above %lld keeps auto's order.\n",
               request.out.c_str(), profile.moe_entries.size(), request.shape.to_string().c_str(), request.tokens.size(),
               request.out.c_str(), (long long)winners.back().first);
}

}  // namespace fp4gemm::cli
