// `fp4gemm bench --moe` on a GPU (moe_gpu_bench.hpp): operands, the check against ref, the timing.
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>

#include "backends/cuda_common/cuda_check.hpp"
#include "bench/gpu_support.hpp"
#include "bench/moe_gpu_bench.hpp"
#include "bench/moe_gpu_peers.hpp"
#include "fp4gemm/error.hpp"
#include "fp4gemm/format/half.hpp"
#include "fp4gemm/moe/moe_runner.hpp"

namespace fp4gemm::bench {
namespace {

using cuda::check_cuda;

// The activation seed of every GPU MoE call (ours and the peers see the same x).
constexpr std::uint64_t kGpuActivationSeed = 43;

// The rows `indices` of a BF16 [T, H] output as FP32.
std::vector<float> rows_of(const std::vector<std::uint16_t>& out, std::int64_t hidden, const std::vector<std::int64_t>& indices) {
  std::vector<float> rows;
  for (std::int64_t token : indices)
    for (std::int64_t c = 0; c < hidden; ++c) rows.push_back(bf16_to_float(out[std::size_t(token * hidden + c)]));
  return rows;
}

// `values` as BF16 bits (they are BF16-exact: the values every implementation and ref see).
std::vector<std::uint16_t> bf16_bits(const std::vector<float>& values) {
  std::vector<std::uint16_t> bits(values.size());
  for (std::size_t i = 0; i < bits.size(); ++i) bits[i] = float_to_bf16(values[i]);
  return bits;
}

struct Expected {
  std::vector<std::int64_t> indices;
  std::vector<double> rows;  // ref on draw 0 at `indices`
};

// Poisons operands.out, runs draw 0 through `call`, and judges the rows against ref. A gross error
// makes the row not ok (its time still said in the note), so a wrong result is never a comparison.
void check_device_call(MoeResult& result, GpuMoeOperands& operands, const Expected& expected, const std::function<void(int)>& call,
                       cudaStream_t stream) {
  check_cuda(cudaMemsetAsync(operands.out.data(), 0xFF, operands.out.bytes(), stream), "bench: poisoning the MoE output");
  call(0);
  check_cuda(cudaStreamSynchronize(stream), "bench: the MoE call checked against ref");
  std::vector<std::uint16_t> out(operands.out.bytes() / 2);
  check_cuda(cudaMemcpy(out.data(), operands.out.data(), operands.out.bytes(), cudaMemcpyDeviceToHost), "bench: reading the MoE output");
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (!std::isfinite(bf16_to_float(out[i]))) {  // every row, not only the checked ones, must have been written
      result.relative_error = std::numeric_limits<double>::infinity();
      result.checked_tokens = std::int64_t(expected.indices.size());
      return;
    }
  }
  result.relative_error = relative_error(rows_of(out, operands.hidden, expected.indices), expected.rows);
  result.checked_tokens = std::int64_t(expected.indices.size());
}

void finish(MoeResult& result, const CallTiming& timing, const std::string& how) {
  result.time_us = timing.timing.median_us;
  result.spread = timing.timing.spread;
  result.repeats = timing.timing.repeats;
  result.note = how + "; " + describe_check(result.relative_error, result.checked_tokens) + "; " +
                (timing.graph ? "CUDA graph of " + std::to_string(timing.calls) + " calls"
                              : "direct launches (graph capture failed: " + timing.capture_error + ")") +
                " cycling through " + std::to_string(kRoutingDraws) + " uniform random routings, median of " +
                std::to_string(timing.timing.repeats) + " replays";
  if (!(result.relative_error <= kGrossRelativeError)) {
    result.ok = false;
    result.note = "WRONG RESULT, not compared (timed at " + std::to_string(result.time_us) + " us): " + result.note;
  }
}

MoeResult failed(const std::string& name, bool peer, const GpuMoeOperands& operands, std::int64_t active, const std::string& why) {
  MoeResult result{name, peer, operands.tokens, active};
  result.ok = false;
  result.note = why;
  return result;
}

// Runs one timing; an exception becomes a row that says what failed (a broken context ends the run).
template <class Timer>
MoeResult guarded(const std::string& name, bool peer, const GpuMoeOperands& operands, std::int64_t active, Timer timer) {
  try {
    return timer();
  } catch (const Error& error) {
    if (error.code() == ErrorCode::unrecoverable) throw;
    return failed(name, peer, operands, active, std::string("failed: ") + error.what());
  } catch (const std::exception& error) {  // host-side (allocation, ...): this row fails, the others still run
    return failed(name, peer, operands, active, std::string("failed: ") + error.what());
  }
}

std::int64_t mean_active(const std::vector<moe::TopK>& routings, std::int64_t experts) {
  double active = 0;
  for (const moe::TopK& routing : routings) active += double(count_active_experts(routing, experts));
  return std::int64_t(std::lround(active / double(routings.size())));
}

Memory memory_of(const std::string& backend) {
  for (const auto& candidate : moe::make_all_moe_backends())
    if (candidate->name() == backend) return candidate->memory();
  throw_invalid("the MoE runner chose '" + backend + "', which is not an MoE backend of this build");
}

// The router rows' operands: routed_draws on the host (x per draw and the oracle's routing of it)
// and each draw's x in device memory (BF16).
struct RoutedOnGpu {
  RoutedDraws draws;
  std::vector<cuda::DeviceBuffer> x;
};

RoutedOnGpu make_routed_operands(const MoeBenchLayer& layer, std::int64_t tokens, std::uint64_t seed) {
  RoutedOnGpu routed{routed_draws(layer, tokens, seed), {}};
  for (const std::vector<float>& values : routed.draws.x) {
    const std::vector<std::uint16_t> bf16 = bf16_bits(values);
    routed.x.push_back(cuda::upload(bf16.data(), bf16.size() * 2, "the MoE bench's routed x"));
  }
  check_cuda(cudaDeviceSynchronize(), "bench: uploading the routed MoE operands");  // legacy-stream uploads
  return routed;
}

class OursOnGpu {
 public:
  OursOnGpu(const MoeBenchLayer& layer, const GpuMoeBenchRequest& request)
      : shape_(layer.shape()), weights_(layer.weights()), device_(request.device), runner_(runner_options(request)),
        handle_(runner_.prepare(weights_)) {}

  // `routed`: each call routes its draw's x through the layer's router (no routing given), else
  // operands' x with the given draws.
  MoeResult time(GpuMoeOperands& operands, const Expected& expected, std::int64_t active, cudaStream_t stream,
                 const RoutedOnGpu* routed = nullptr) {
    const moe::MoeProblem problem = shape_.problem(operands.tokens, routed == nullptr);
    const moe::MoeExplanation plan = runner_.explain(problem);
    if (plan.choice.empty()) return failed("fp4gemm", false, operands, active, "no MoE backend can run it: " + plan.choice_reason);
    MoeResult result{plan.choice, false, operands.tokens, active};
    moe::MoeOptions options;
    options.top_k = shape_.top_k;
    options.norm_topk_prob = shape_.norm_topk_prob;
    if (memory_of(plan.choice) == Memory::cuda) {
      const MutableDenseView out{operands.out.data(), DType::bf16, operands.tokens, shape_.hidden, 0, Memory::cuda, device_};
      const auto call = [&](int draw) {
        const std::size_t d = std::size_t(draw);
        const DenseView x{routed != nullptr ? routed->x[d].data() : operands.x.data(), DType::bf16, operands.tokens, shape_.hidden, 0,
                          Memory::cuda, device_};
        const moe::RoutingView routing = routed != nullptr ? moe::RoutingView{}
                                                           : moe::RoutingView{operands.ids[d].as<const std::int32_t>(),
                                                                              operands.weights[d].as<const float>(), Memory::cuda, device_};
        runner_.run({x, routing, options}, handle_, out, RunContext{stream});
      };
      check_device_call(result, operands, expected, call, stream);  // also the canary and the layout, outside the timing
      for (int draw = 1; draw < kRoutingDraws; ++draw) call(draw);
      check_cuda(cudaStreamSynchronize(stream), "bench: the MoE layer's first call of each routing");
      const CallTiming timing = time_calls(stream, calls_per_graph(kRoutingDraws), [&](int index) { call(index % kRoutingDraws); });
      finish(result, timing, routed != nullptr ? "served by the MoE runner from device memory, routed by the layer's router"
                                                : "served by the MoE runner from device memory");
    } else {
      time_on_host(result, operands, expected, options, routed);
    }
    const moe::MoeExplanation served = runner_.explain(problem);  // after any fallback while serving
    result.name = served.choice;
    result.kernel = served.plan;
    return result;
  }

 private:
  static moe::MoeRunnerOptions runner_options(const GpuMoeBenchRequest& request) {
    moe::MoeRunnerOptions options;
    options.backend = request.backend == "auto" ? "" : request.backend;
    options.device = request.device;
    return options;
  }

  // The served backend runs on the host: as the CPU bench times it (wall clock around each call).
  void time_on_host(MoeResult& result, GpuMoeOperands& operands, const Expected& expected, const moe::MoeOptions& options,
                    const RoutedOnGpu* routed) {
    const MoeLayerCall call = [&](const DenseView& x, const moe::TopK& routing, const MutableDenseView& out) {
      const moe::RoutingView given = routed != nullptr ? moe::RoutingView{} : moe::RoutingView{routing.ids.data(), routing.weights.data()};
      runner_.run({x, given, options}, handle_, out);
    };
    const std::vector<moe::TopK>& routings = routed != nullptr ? routed->draws.routings : operands.routings;
    const std::vector<std::uint16_t> x = bf16_bits(routed != nullptr ? routed->draws.x.front() : operands.x_values);
    std::vector<std::uint16_t> out(x.size(), 0xFFFF);
    call({x.data(), DType::bf16, operands.tokens, shape_.hidden}, routings.front(),
         {out.data(), DType::bf16, operands.tokens, shape_.hidden});
    result.relative_error = relative_error(rows_of(out, shape_.hidden, expected.indices), expected.rows);
    result.checked_tokens = std::int64_t(expected.indices.size());
    const MoeResult timed = time_moe_call(result.name, false, shape_, routings, call, DType::bf16, DType::bf16,
                                          routed != nullptr ? &routed->draws.x : nullptr);
    result.time_us = timed.time_us;
    result.spread = timed.spread;
    result.repeats = timed.repeats;
    result.ok = timed.ok;
    result.note = "served by the MoE runner from host memory (its backend's memory is host), timed by the host clock; " +
                  describe_check(result.relative_error, result.checked_tokens) + "; " + timed.note;
    if (!(result.relative_error <= kGrossRelativeError)) {
      result.ok = false;
      result.note = "WRONG RESULT, not compared: " + result.note;
    }
  }

  MoeBenchShape shape_;
  moe::MoeWeights weights_;
  int device_;
  moe::MoeRunner runner_;
  moe::MoeLayerHandle handle_;
};

MoeResult time_peer(const std::string& name, const MoeBenchLayer& layer, GpuMoeOperands& operands, const Expected& expected,
                    std::int64_t active, cudaStream_t stream,
                    std::unique_ptr<GpuMoePeer> (*make)(const MoeBenchLayer&, GpuMoeOperands&)) {
  if (layer.shape().shared_intermediate > 0) {
    return failed(name, true, operands, active, "skipped: the GPU peers run the routed experts only, not a shared expert");
  }
  std::unique_ptr<GpuMoePeer> peer = make(layer, operands);
  peer->prepare(stream);
  MoeResult result{peer->name(), true, operands.tokens, active};
  const auto call = [&](int draw) { peer->enqueue(draw, stream); };
  check_device_call(result, operands, expected, call, stream);
  const CallTiming timing = time_calls(stream, calls_per_graph(kRoutingDraws), [&](int index) { call(index % kRoutingDraws); });
  finish(result, timing, peer->how());
  return result;
}

}  // namespace

GpuMoeOperands make_gpu_moe_operands(const MoeBenchShape& shape, std::vector<moe::TopK> routings) {
  GpuMoeOperands operands;
  operands.tokens = routings.front().tokens;
  operands.hidden = shape.hidden;
  operands.top_k = shape.top_k;
  const std::int64_t elements = operands.tokens * shape.hidden;
  operands.x_values = random_normal_values(elements, kGpuActivationSeed);
  std::vector<std::uint16_t> bf16(operands.x_values.size());
  for (std::size_t i = 0; i < bf16.size(); ++i) {
    bf16[i] = float_to_bf16(operands.x_values[i]);
    operands.x_values[i] = bf16_to_float(bf16[i]);  // the values every implementation and ref see
  }
  operands.x = cuda::upload(bf16.data(), bf16.size() * 2, "the MoE bench's x");
  operands.out = cuda::DeviceBuffer(std::size_t(elements) * 2, "the MoE bench's output");
  for (const moe::TopK& routing : routings) {
    operands.ids.push_back(cuda::upload(routing.ids.data(), routing.ids.size() * 4, "the MoE bench's top-k ids"));
    operands.weights.push_back(cuda::upload(routing.weights.data(), routing.weights.size() * 4, "the MoE bench's top-k weights"));
  }
  operands.routings = std::move(routings);
  // The uploads ran on the legacy stream, which the bench's non-blocking stream does not wait for.
  check_cuda(cudaDeviceSynchronize(), "bench: uploading the MoE operands");
  return operands;
}

std::vector<MoeResult> bench_moe_gpu(const MoeBenchLayer& layer, const GpuMoeBenchRequest& request) {
  cuda::DeviceGuard guard(request.device);
  const MoeBenchShape& shape = layer.shape();
  Stream stream;
  OursOnGpu ours(layer, request);
  const moe::MoeWeights weights = layer.weights();
  std::vector<MoeResult> results;
  for (std::int64_t tokens : request.tokens) {
    GpuMoeOperands operands = make_gpu_moe_operands(shape, routing_draws(tokens, shape.experts, shape.top_k, request.routing_seed));
    const std::int64_t active = mean_active(operands.routings, shape.experts);
    Expected expected;
    expected.indices = check_tokens(tokens, kMoeCheckTokens);
    expected.rows = reference_rows(weights, operands.x_values, shape.hidden, operands.routings.front(), expected.indices);
    results.push_back(guarded("fp4gemm", false, operands, active, [&] { return ours.time(operands, expected, active, stream.get()); }));
    // The whole layer: the same backend routing each draw's x with the layer's router.
    if (request.include_routed) {
      const RoutedOnGpu routed = make_routed_operands(layer, tokens, request.routing_seed);
      const std::int64_t routed_active = mean_active(routed.draws.routings, shape.experts);
      Expected routed_expected;
      routed_expected.indices = expected.indices;
      routed_expected.rows = reference_rows(weights, routed.draws.x.front(), shape.hidden, routed.draws.routings.front(), expected.indices);
      MoeResult whole = guarded("fp4gemm", false, operands, routed_active,
                                [&] { return ours.time(operands, routed_expected, routed_active, stream.get(), &routed); });
      whole.routed = true;  // here, so a row that failed is marked too
      results.push_back(whole);
    }
    if (!request.include_peers) continue;
    results.push_back(guarded("cublas_bf16_grouped", true, operands, active, [&] {
      return time_peer("cublas_bf16_grouped", layer, operands, expected, active, stream.get(), make_cublas_bf16_grouped_peer);
    }));
    results.push_back(guarded("cublaslt_fp8", true, operands, active, [&] {
      return time_peer("cublaslt_fp8", layer, operands, expected, active, stream.get(), make_cublaslt_fp8_peer);
    }));
  }
  return results;
}

}  // namespace fp4gemm::bench
