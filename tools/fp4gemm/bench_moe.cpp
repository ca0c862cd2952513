#include "bench_moe.hpp"

#include <algorithm>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "bench/moe_gpu_bench.hpp"
#include "bench/moe_report.hpp"
#include "fp4gemm/error.hpp"
#include "fp4gemm/io/model_step.hpp"
#include "moe_execution.hpp"
#include "problem_options.hpp"

namespace fp4gemm::cli {

bench::MoeBenchShape moe_shape_from_config(const std::string& config, int tp, int ep) {
  const io::ModelStep step = io::step_from_config(config, tp, ep);
  if (!step.moe) throw_invalid(config + ": the model has no MoE layer (no num_experts); bench its GEMMs without --moe");
  bench::MoeBenchShape shape{step.moe->experts, step.moe->hidden, step.moe->intermediate, 0, step.moe->top_k, step.moe->norm_topk_prob};
  for (const io::StepGemm& gemm : step.gemms)
    if (gemm.kind == "shared expert" && gemm.gemm.layer.find("gate_up") != std::string::npos) shape.shared_intermediate = gemm.gemm.n / 2;
  return shape;
}

MoeTimings time_moe_layer(const bench::MoeBenchLayer& layer, const std::vector<std::int64_t>& tokens, const std::string& backend,
                          bool include_peers, bool include_routed) {
  MoeTimings timings;
  const bench::MoeBenchShape& shape = layer.shape();
  const moe::MoeWeights weights = layer.weights();
  moe::MoeOptions options;
  options.top_k = shape.top_k;
  options.norm_topk_prob = shape.norm_topk_prob;
  const PreparedMoeCall ours = prepare_moe_call(weights, backend == "auto" ? "" : backend, options);
  std::optional<bench::OpenblasMoePeer> peer;
  std::optional<std::string> peer_skipped = bench::OpenblasMoePeer::skip_reason(shape);
  if (include_peers && !peer_skipped) peer.emplace(layer);
  // The whole layer: the same call with no routing given, so the layer's router routes each draw's x.
  const bench::MoeLayerCall ours_routed = [&](const DenseView& x, const moe::TopK&, const MutableDenseView& out) {
    ours.call(x, moe::TopK{}, out);
  };
  for (std::int64_t count : tokens) {
    const std::vector<moe::TopK> routings = bench::routing_draws(count, shape.experts, shape.top_k, kMoeRoutingSeed);
    bench::MoeResult result = bench::time_moe_call("fp4gemm", false, shape, routings, ours.call, DType::bf16, DType::bf16);
    result.name = ours.served();
    result.kernel = ours.plan();
    timings.results.push_back(result);
    if (include_routed) {
      const bench::RoutedDraws routed = bench::routed_draws(layer, count, kMoeRoutingSeed);
      bench::MoeResult whole =
          bench::time_moe_call("fp4gemm", false, shape, routed.routings, ours_routed, DType::bf16, DType::bf16, &routed.x);
      whole.name = ours.served();
      whole.kernel = ours.plan();
      whole.routed = true;
      timings.results.push_back(whole);
    }
    if (peer) {
      timings.results.push_back(bench::time_moe_call("openblas_sgemm", true, shape, routings, std::ref(*peer), DType::f32, DType::f32));
    } else if (include_peers) {
      bench::MoeResult skipped{"openblas_sgemm", true, count, bench::count_active_experts(routings.front(), shape.experts)};
      skipped.ok = false;
      skipped.note = "skipped: " + *peer_skipped;
      timings.results.push_back(skipped);
    }
  }
  return timings;
}

MoeTimings time_moe_layer_on(const DeviceInfo& device, const bench::MoeBenchLayer& layer,
                             const std::vector<std::int64_t>& tokens, const std::string& backend, bool include_peers,
                             bool include_routed) {
  if (!device.is_cuda()) return time_moe_layer(layer, tokens, backend, include_peers, include_routed);
#ifdef FP4GEMM_WITH_CUDA
  MoeTimings timings;
  timings.results = bench::bench_moe_gpu(layer, {device.index, tokens, backend, include_peers, kMoeRoutingSeed, include_routed});
  return timings;
#else
  throw_invalid("this build has no CUDA support; use --device cpu");
#endif
}

namespace {

void print_moe_table(const MoeBenchRequest& request, const MoeTimings& timings, const bench::Ceilings& ceilings,
                     const std::string& device) {
  std::printf("device: %s\n", device.c_str());
  std::printf("ceilings: %.1f GB/s (%s); %.3f TFLOP/s (%s)\n", ceilings.bandwidth_gbps, ceilings.bandwidth_method.c_str(),
              ceilings.compute_tflops, ceilings.compute_method.c_str());
  std::printf("MoE layer: %s, %d uniform random routings in turn (seeds from %llu); active = experts a call touches, mean\n",
              request.shape.to_string().c_str(), bench::kRoutingDraws, (unsigned long long)kMoeRoutingSeed);
  std::printf("%-24s %6s %7s %11s %11s %9s %10s  %s\n", "backend", "tokens", "active", "us", "roofline us", "x roofline", "ref error",
              "peer us / our us");
  for (const bench::MoeResult& result : timings.results) {
    const std::string label = result.name + (result.peer ? " (peer)" : result.routed ? " (router)" : "");
    if (!result.ok) {
      std::printf("%-24s %6lld %7lld  %s\n", label.c_str(), (long long)result.tokens, (long long)result.active_experts, result.note.c_str());
      continue;
    }
    const double roofline = bench::moe_roofline_us(request.shape, result.tokens, result.active_experts, ceilings, result.routed);
    char multiple[32] = "-", error[32] = "-";
    if (roofline > 0) std::snprintf(multiple, sizeof multiple, "%.2f", result.time_us / roofline);
    if (result.checked_tokens > 0) std::snprintf(error, sizeof error, "%.2g", result.relative_error);
    std::string speedups;
    for (const auto& [peer, ratio] : bench::moe_speedups(result, timings.results)) {
      char text[96];
      std::snprintf(text, sizeof text, "%s%s %.2fx", speedups.empty() ? "" : ", ", peer.c_str(), ratio);
      speedups += text;
    }
    std::printf("%-24s %6lld %7lld %11.1f %11.1f %9s %10s  %s\n", label.c_str(), (long long)result.tokens,
                (long long)result.active_experts, result.time_us, roofline, multiple, error, speedups.empty() ? "-" : speedups.c_str());
  }
  std::printf("(router): the whole layer, routed by its router (logits, softmax, top-k) on each draw's x; the other rows are given "
              "the routing.\nroofline = max(bytes of the touched experts at 0.5625 B/element, shared expert, router when it ran, x and y "
              "/ bandwidth, FLOPs / compute rate); x roofline = time / roofline; ref error = relative L2 error against ref on a few "
              "tokens.\n");
  // How each implementation ran, once (the first token count's notes; later ones differ only in numbers).
  for (const bench::MoeResult& result : timings.results)
    if (result.ok && result.tokens == timings.results.front().tokens)
      std::printf("  %s%s: %s\n", result.name.c_str(), result.routed ? " (router)" : "", result.note.c_str());
  // What ours ran at each token count: the kernels change with T (fp4gemm explain says the same).
  for (const bench::MoeResult& result : timings.results)
    if (result.ok && !result.kernel.empty())
      std::printf("  %s%s, T = %lld: %s\n", result.name.c_str(), result.routed ? " (router)" : "", (long long)result.tokens,
                  result.kernel.c_str());
}

void print_moe_json(const MoeBenchRequest& request, const MoeTimings& timings, const bench::Ceilings& ceilings, const std::string& device) {
  for (const bench::MoeResult& result : timings.results)
    std::printf("%s\n", bench::moe_json_line(request.shape, result, timings.results, ceilings, device).dump().c_str());
}

}  // namespace

void add_moe_layer_options(CLI::App* command, bench::MoeBenchShape& shape, CLI::Option* moe_flag, CLI::Option* config) {
  const auto moe_option = [&](const char* name, auto& value, const char* help) {
    command->add_option(name, value, help)->needs(moe_flag)->excludes(config)->check(CLI::PositiveNumber);
  };
  moe_option("--experts", shape.experts, "Routed experts E of the --moe layer (default 64)");
  moe_option("--topk", shape.top_k, "Experts per token k (default 8)");
  moe_option("--hidden", shape.hidden, "Hidden size H (default 1024)");
  moe_option("--intermediate", shape.intermediate, "Expert intermediate size I (default 512)");
}

void run_moe_bench(const MoeBenchRequest& request) {
  bench::check_moe_bench_shape(request.shape);
  MoeTimings timings;
  bench::Ceilings ceilings;
  std::string device_name;
  if (resolves_to_gpu(request.device)) {
#ifdef FP4GEMM_WITH_CUDA
    const DeviceInfo gpu = gpu_device(request.device);
    device_name = gpu.to_string();
    ceilings = bench::measure_gpu_ceilings(gpu.index);
    const bench::MoeBenchLayer layer(request.shape);
    timings = time_moe_layer_on(gpu, layer, request.tokens, request.backend, !request.no_peers);
#else
    throw_invalid("this build has no CUDA support; use --device cpu");
#endif
  } else {
    device_name = probe_cpu().to_string();
    ceilings = bench::measure_cpu_ceilings();
    const bench::MoeBenchLayer layer(request.shape);  // made once for every token count
    timings = time_moe_layer(layer, request.tokens, request.backend, !request.no_peers);
  }
  if (request.json) {
    print_moe_json(request, timings, ceilings, device_name);
  } else {
    print_moe_table(request, timings, ceilings, device_name);
  }
}

}  // namespace fp4gemm::cli
