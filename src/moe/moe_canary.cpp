// The MoE canary: before a backend first serves a kind of MoE problem (operand types, routing,
// shared expert), one small random layer of that kind runs on it into a poisoned output and is
// judged against the FP64 oracle (moe_reference.hpp). A wrong answer quarantines the backend.
#include <algorithm>
#include <memory>
#include <random>

#include "dispatch/runner_pieces.hpp"
#include "moe/moe_reference.hpp"
#include "moe/moe_runner_state.hpp"
#include "moe/moe_staging.hpp"
#include "moe/random_moe_layer.hpp"

namespace fp4gemm::moe {
namespace {

// Five experts (not a power of two), k = 2, four tokens: small enough for the oracle to be cheap,
// large enough that experts get zero, one and several tokens.
constexpr std::int64_t kCanaryExperts = 5, kCanaryHidden = 64, kCanaryIntermediate = 32, kCanaryTokens = 4;
constexpr int kCanaryTopK = 2;
// As the dense canary: any correct FP32-accumulating backend is far inside it, a wrong layout,
// expert, scale or weight far outside.
constexpr double kCanaryAccumulationError = 1e-3;

}  // namespace

std::string moe_canary_key(const std::string& backend, const MoeProblem& problem) {
  return backend + "|" + to_string(problem.activation) + "|" + to_string(problem.output) + "|" +
         (problem.routing_given ? "given" : "router") + "|" +
         (problem.shared_expert ? (problem.shared_dense ? "dense" : "nvfp4") : "none");
}

CanaryReport run_moe_canary(MoeBackend& backend, const DeviceInfo& device, const MoeProblem& served) {
  CanaryReport report;
  report.backend = backend.name();
  const std::uint64_t seed = std::random_device{}();
  std::mt19937_64 rng(seed);
  RandomMoeSpec spec;
  spec.experts = kCanaryExperts;
  spec.hidden = kCanaryHidden;
  spec.intermediate = kCanaryIntermediate;
  spec.router = !served.routing_given;
  spec.shared = served.shared_expert ? (served.shared_dense ? SharedKind::dense : SharedKind::nvfp4) : SharedKind::none;
  const RandomMoeLayer layer = make_random_moe_layer(spec, rng);
  const DType input = served.activation == ActivationType::f32 ? DType::f32 : DType::bf16;
  const RandomHiddenStates x = make_random_hidden_states(kCanaryTokens, kCanaryHidden, input, rng);

  MoeCall call;
  call.x = x.view();
  call.options.top_k = kCanaryTopK;
  call.options.activation = served.activation;
  std::vector<std::int32_t> ids;
  std::vector<float> weights;
  if (served.routing_given) {
    for (std::int64_t t = 0; t < kCanaryTokens; ++t) {
      ids.push_back(std::int32_t(t % kCanaryExperts));
      ids.push_back(std::int32_t((t + 2) % kCanaryExperts));
      weights.push_back(0.75f);
      weights.push_back(0.25f);
    }
    call.routing.topk_ids = ids.data();
    call.routing.topk_weights = weights.data();
  }
  MoeProblem problem = served;
  problem.tokens = kCanaryTokens;
  problem.hidden = kCanaryHidden;
  problem.intermediate = kCanaryIntermediate;
  problem.experts = kCanaryExperts;
  problem.top_k = kCanaryTopK;
  problem.shared_intermediate = spec.shared_intermediate;
  report.problem = problem.to_string();
  if (const CheckResult check = backend.check(problem, device); !check) {
    report.reason = "its checks refuse the canary " + report.problem + ": " + check.reason;
    return report;
  }
  // A simulated GPU (tests, `--simulate-sm`) has no hardware behind it to run a GPU backend on.
  if (backend.memory() == Memory::cuda && device.is_cuda() && !device.probed) {
    report.reason = "no GPU behind the simulated device to run its canary " + report.problem + " on";
    return report;
  }
  report.ran = true;
  const std::string replay = " on canary " + report.problem + " (seed " + std::to_string(seed) + ")";
  std::vector<std::uint8_t> bytes(std::size_t(kCanaryTokens * kCanaryHidden) * dtype_size(served.output), 0xFF);
  const MutableDenseView out{bytes.data(), served.output, kCanaryTokens, kCanaryHidden, 0, Memory::host, 0};
  try {
    const auto prepared = backend.prepare(layer.weights, device);
    run_moe_in_backend_memory(backend, *prepared, call, out, {}, device.index, /*carry_output=*/true);  // the poison too
  } catch (const Error& error) {
    if (error.code() == ErrorCode::unrecoverable) throw;
    report.reason = std::string("threw: ") + error.what() + replay;
    return report;
  } catch (...) {
    report.reason = "threw: " + dispatch::describe_failure(std::current_exception()) + replay;
    return report;
  }
  const std::string verdict =
      compare_with_moe_reference(reference_moe(layer.weights, call, kCanaryAccumulationError), out.as_const());
  report.passed = verdict.empty();
  if (!report.passed) {
    // One line for logs and explain: the count and the first mismatch.
    const std::size_t second_line = verdict.find('\n', verdict.find('\n') + 1);
    std::string summary = verdict.substr(0, second_line);
    std::replace(summary.begin(), summary.end(), '\n', ' ');
    report.reason = "differs from ref: " + summary + replay;
  }
  return report;
}

}  // namespace fp4gemm::moe
