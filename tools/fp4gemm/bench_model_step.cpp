#include "bench_model_step.hpp"

#include <cstdio>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "bench/model_step_report.hpp"
#include "bench_moe.hpp"
#include "fp4gemm/error.hpp"
#include "fp4gemm/io/model_step.hpp"
#include "moe_execution.hpp"
#include "problem_options.hpp"

namespace fp4gemm::cli {
namespace {

using ShapeKey = std::pair<std::int64_t, std::int64_t>;  // (N, K)

// The MoE layer of a step at T tokens as each active expert's two GEMMs see it.
struct ExpertGemms {
  double active = 0;
  std::int64_t rows = 0;  // per active expert
  GemmProblem gate_up, down;
};

ExpertGemms expert_gemms(const io::StepMoe& moe, std::int64_t tokens) {
  ExpertGemms gemms;
  gemms.active = bench::expected_active_experts(tokens, moe.experts, moe.top_k);
  gemms.rows = bench::rows_per_active_expert(tokens, moe.top_k, gemms.active);
  gemms.gate_up = {gemms.rows, 2 * moe.intermediate, moe.hidden};
  gemms.down = {gemms.rows, moe.hidden, moe.intermediate};
  return gemms;
}

// Our fastest time and each peer's for `problem`; false when none of ours ran it.
bool times_for(const std::vector<bench::Result>& results, const GemmProblem& problem, double& ours, std::map<std::string, double>& peers) {
  ours = 0;
  for (const bench::Result& result : results) {
    if (!result.ok || result.floor || !(result.problem == problem)) continue;
    if (result.peer) {
      peers[result.backend] = result.time_us;
    } else if (ours == 0 || result.time_us < ours) {
      ours = result.time_us;
    }
  }
  return ours > 0;
}

std::string shape_name(const io::StepGemm& gemm) {
  return gemm.gemm.layer + " " + std::to_string(gemm.gemm.n) + "x" + std::to_string(gemm.gemm.k);
}

// The parts of the step at `tokens`. The MoE layer is the MoE runner's measured time on the bench's
// device when that timing succeeded, else an estimate from its expert GEMMs; its peers likewise.
std::vector<bench::StepPart> step_parts(const io::ModelStep& step, std::int64_t tokens, const BenchRun& run,
                                        const MoeTimings* moe_timings, std::string& moe_method) {
  std::vector<bench::StepPart> parts;
  for (const io::StepGemm& gemm : step.gemms) {
    if (gemm.count == 0) continue;
    bench::StepPart part{gemm.kind, shape_name(gemm), gemm.count};
    if (times_for(run.results, {tokens, gemm.gemm.n, gemm.gemm.k}, part.ours_us, part.peer_us)) parts.push_back(part);
  }
  if (!step.moe) return parts;
  const ExpertGemms experts = expert_gemms(*step.moe, tokens);
  bench::StepPart part{"MoE experts", "experts E=" + std::to_string(step.moe->experts) + " k=" + std::to_string(step.moe->top_k), step.moe->count};
  double gate_up_us = 0, down_us = 0;
  std::map<std::string, double> gate_up_peers, down_peers;
  times_for(run.results, experts.gate_up, gate_up_us, gate_up_peers);
  times_for(run.results, experts.down, down_us, down_peers);
  part.ours_us = bench::moe_from_expert_gemms(experts.active, gate_up_us, down_us);
  for (const auto& [peer, time] : gate_up_peers)
    if (down_peers.count(peer)) part.peer_us[peer] = bench::moe_from_expert_gemms(experts.active, time, down_peers[peer]);
  moe_method = "from expert GEMMs: " + std::to_string(int(experts.active + 0.5)) + " active experts x (gate_up + down at M = " +
               std::to_string(experts.rows) + ")";
  if (moe_timings != nullptr) {
    bool with_router = false;  // the whole layer with its router wins over given routing when both were timed
    for (const bench::MoeResult& result : moe_timings->results) {
      if (result.tokens != tokens || !result.ok) continue;
      if (result.peer) {
        part.peer_us[result.name] = result.time_us;
      } else if (!with_router) {
        with_router = result.routed;
        part.ours_us = result.time_us;
        moe_method = "the MoE layer timed whole (" + result.name + "), " +
                     (result.routed ? "routed by its router on random x" : "uniform random routings given") + " in turn";
      }
    }
  }
  if (part.ours_us > 0) parts.push_back(part);
  return parts;
}

void print_step(const io::ModelStep& step, std::int64_t tokens, const std::vector<bench::StepPart>& parts, const std::string& moe_method) {
  std::printf("\ntokens %lld (a decode step of %lld sequences)\n", (long long)tokens, (long long)tokens);
  std::printf("  %-17s %-40s %5s %11s %12s\n", "kind", "part", "count", "us/call", "us/step");
  for (const bench::StepPart& part : parts) {
    std::printf("  %-17s %-40s %5lld %11.1f %12.1f\n", part.kind.c_str(), part.name.c_str(), (long long)part.count, part.ours_us,
                part.ours_us * double(part.count));
  }
  if (step.moe) std::printf("  MoE experts: %s\n", moe_method.c_str());
  for (const bench::StepTotal& total : bench::step_totals(parts)) {
    std::string shares;
    for (const auto& [kind, time] : total.kind_us) {
      char share[64];
      std::snprintf(share, sizeof share, "%s%s %.0f%%", shares.empty() ? "" : ", ", kind.c_str(), 100.0 * time / total.step_us);
      shares += share;
    }
    std::printf("  %-16s step %10.1f us  %9.1f tok/s per sequence  %10.1f tok/s per batch  (%s)%s\n", total.who.c_str(), total.step_us,
                bench::tokens_per_second(total.step_us, 1), bench::tokens_per_second(total.step_us, tokens), shares.c_str(),
                total.complete() ? "" : ("  incomplete: not timed for " + std::to_string(total.missing.size()) + " part(s)").c_str());
  }
}

nlohmann::json step_json(std::int64_t tokens, const std::vector<bench::StepPart>& parts, const std::string& moe_method) {
  nlohmann::json report{{"tokens", tokens}, {"moe_method", moe_method}, {"parts", nlohmann::json::array()}};
  for (const bench::StepPart& part : parts)
    report["parts"].push_back({{"kind", part.kind}, {"name", part.name}, {"count", part.count}, {"us", part.ours_us}, {"peers_us", part.peer_us}});
  for (const bench::StepTotal& total : bench::step_totals(parts)) {
    report["totals"].push_back({{"who", total.who},
                                {"step_us", total.step_us},
                                {"kind_us", total.kind_us},
                                {"tokens_per_s_per_sequence", bench::tokens_per_second(total.step_us, 1)},
                                {"tokens_per_s_per_batch", bench::tokens_per_second(total.step_us, tokens)},
                                {"missing", total.missing}});
  }
  return report;
}

}  // namespace

void run_model_step_report(const ModelStepRequest& request) {
  const io::ModelStep step = io::step_from_config(request.config, request.tp, request.ep);
  // Each distinct GEMM shape once, at every token count (shape by shape, as the bench makes weights).
  std::map<ShapeKey, std::set<std::int64_t>> rows_by_shape;
  for (const io::StepGemm& gemm : step.gemms)
    if (gemm.count > 0)
      for (std::int64_t tokens : request.tokens) rows_by_shape[{gemm.gemm.n, gemm.gemm.k}].insert(tokens);
  if (step.moe) {
    for (std::int64_t tokens : request.tokens) {
      const ExpertGemms experts = expert_gemms(*step.moe, tokens);
      rows_by_shape[{experts.gate_up.n, experts.gate_up.k}].insert(experts.rows);
      rows_by_shape[{experts.down.n, experts.down.k}].insert(experts.rows);
    }
  }
  std::vector<GemmProblem> problems;
  for (const auto& [shape, rows] : rows_by_shape) {
    check_weight_shape({shape.first, shape.second}, request.config);
    for (std::int64_t m : rows) problems.push_back({m, shape.first, shape.second});
  }
  const BenchRun run = run_benchmark(request.device, problems, request.backend, request.no_peers);

  // The whole MoE layer through the MoE runner on the same device (on a GPU, cuda_moe when it
  // serves, beside the GPU MoE peers), instead of an estimate from its expert GEMMs.
  MoeTimings moe_timings;
  const bool time_layer = step.moe.has_value();
  if (time_layer) {
    const bench::MoeBenchLayer layer({step.moe->experts, step.moe->hidden, step.moe->intermediate, 0, step.moe->top_k, step.moe->norm_topk_prob});
    try {
      moe_timings = time_moe_layer_on(run.device, layer, request.tokens, "", !request.no_peers);
    } catch (const Error& error) {
      if (error.code() == ErrorCode::unrecoverable) throw;  // the CUDA context is gone
      std::fprintf(stderr, "bench: the MoE layer could not be timed whole (%s); estimating it from its expert GEMMs\n",
                   error.what());
    }
  }
  if (!request.json) {
    std::printf("model: %s (%s), %lld layers, per GPU of --tp %d --ep %d\n", request.config.c_str(), step.model_type.c_str(),
                (long long)step.layers, request.tp, request.ep);
    if (step.moe) {
      std::printf("MoE routing: top-%d, norm_topk_prob=%s (%s)\n", step.moe->top_k, step.moe->norm_topk_prob ? "true" : "false",
                  step.moe->norm_topk_prob_origin.c_str());
    }
    std::printf("device: %s\n", run.device_name.c_str());
  }
  for (std::int64_t tokens : request.tokens) {
    std::string moe_method;
    const std::vector<bench::StepPart> parts = step_parts(step, tokens, run, time_layer ? &moe_timings : nullptr, moe_method);
    if (request.json) {
      nlohmann::json report = step_json(tokens, parts, moe_method);
      report["device"] = run.device_name;
      report["config"] = request.config;
      report["tp"] = request.tp;
      report["ep"] = request.ep;
      std::printf("%s\n", report.dump().c_str());
    } else {
      print_step(step, tokens, parts, moe_method);
    }
  }
  if (!request.json) {
    std::printf("\nThe step holds the NVFP4 GEMMs and MoE layers only: attention's softmax, norms, communication and sampling\n"
                "come on top, so tokens/s here is a ceiling for the measured kernels, not an end-to-end rate.\n");
  }
}

}  // namespace fp4gemm::cli
