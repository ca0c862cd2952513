// The canary's choice of problem: a ladder of candidates per served problem, and the doctor's
// probes. See canary_problems.hpp.
#include "dispatch/canary_problems.hpp"

#include <algorithm>

namespace fp4gemm::dispatch {
namespace {

// Canary shapes tried first: M spans more than one 8-row group and K more than one 128-column
// scale tile, N covers a 64-wide tile. Small enough that any backend's canary costs nothing.
constexpr std::int64_t kCanaryShapes[][3] = {{16, 64, 256}, {1, 64, 256}};

// The most rows a ladder problem takes from the served M: enough for every kernel chosen by M
// (cuda_nvfp4's prefill kernel serves M > 64), no more so the canary stays cheap.
constexpr std::int64_t kCanaryMaxRows = 256;

// NOTE: the cost cap of a canary problem, M*N*K multiply-adds. The FP64 CPU reference checks
// every canary, so it must stay under a second or two on 2 cores: `fp4gemm bench --backend ref`
// ran 64x8192x1024 (2^29) in 0.66 s on a 2-core AMD EPYC. A kernel that only problems above the cap
// take is canaried through another kernel, and the report says so.
constexpr std::int64_t kCanaryMaxMultiplyAdds = std::int64_t(1) << 29;

bool within_cost_cap(const GemmProblem& problem) {
  // In double: M*N*K of a served problem may overflow 64 bits.
  return double(problem.m) * double(problem.n) * double(problem.k) <= double(kCanaryMaxMultiplyAdds);
}

// The doctor's probes after kCanaryShapes: problems that take the kernels those do not reach,
// cuda_nvfp4's wgmma (M >= 33 on N >= 8192, SM 9.0: sm80_nvfp4_mma_tuning.hpp's kWgmmaMinM, kWgmmaMinN),
// its prefill kernel (M > 64) and its wide prefill kernel (M >= 256 on tiles covering 70 % of the
// SMs: 93 tiles of 128 rows, enough for 132 SMs, with K = 128 to stay under the cost cap).
// CanaryProblems.CudaNvfp4NamesEachKernelAndTheCanaryReachesIt fails when a change of those rules
// leaves a kernel unreached.
constexpr std::int64_t kDoctorKernelShapes[][3] = {{48, 8192, 256}, {256, 64, 256}, {256, 11904, 128}};

GemmProblem with_types(const std::int64_t (&shape)[3], ActivationType activation, DType output) {
  return {shape[0], shape[1], shape[2], activation, output};
}

}  // namespace

std::vector<GemmProblem> canary_candidates(const GemmProblem& served) {
  const std::int64_t rows = std::min(served.m, kCanaryMaxRows);
  const auto shaped = [&](std::int64_t m, std::int64_t n, std::int64_t k) {
    return GemmProblem{m, n, k, served.activation, served.output};
  };
  const GemmProblem last_resort = shaped(std::min<std::int64_t>(served.m, 16), served.n, served.k);
  std::vector<GemmProblem> ladder;
  for (const auto& shape : kCanaryShapes) ladder.push_back(with_types(shape, served.activation, served.output));
  std::vector<GemmProblem> rungs{shaped(rows, 64, 256), shaped(rows, served.n, 256), shaped(rows, 64, served.k), last_resort,
                                 shaped(rows, served.n, served.k)};
  // Then the doctor's kernel probes: a kernel the served shape reaches only above the cost cap
  // (cuda_nvfp4's wgmma on tall weights at M = 17-24) is still reached by a probe of its own.
  for (const auto& probe : kDoctorKernelShapes) rungs.push_back(with_types(probe, served.activation, served.output));
  for (const GemmProblem& problem : rungs) {
    if (!within_cost_cap(problem) && !(problem == last_resort)) continue;
    if (std::find(ladder.begin(), ladder.end(), problem) == ladder.end()) ladder.push_back(problem);
  }
  return ladder;
}

CanaryChoice choose_canary_problem(const Backend& backend, const DeviceInfo& device, const GemmProblem& served) {
  CanaryChoice choice;
  choice.kernel = backend.kernel_name(served, device);
  for (const GemmProblem& candidate : canary_candidates(served)) {
    const CheckResult check = backend.check(candidate, device);
    if (!check) {
      if (choice.rejection.empty()) choice.rejection = check.reason;
      continue;
    }
    const std::string kernel = backend.kernel_name(candidate, device);
    if (kernel == choice.kernel) {
      choice.problem = candidate;
      choice.problem_kernel = kernel;
      choice.reaches_kernel = true;
      return choice;
    }
    if (!choice.problem) {  // the fallback when no candidate reaches the kernel
      choice.problem = candidate;
      choice.problem_kernel = kernel;
    }
  }
  return choice;
}

std::vector<GemmProblem> doctor_canary_problems(ActivationType activation, DType output) {
  std::vector<GemmProblem> problems;
  for (const auto& shape : kCanaryShapes) problems.push_back(with_types(shape, activation, output));
  for (const auto& shape : kDoctorKernelShapes) problems.push_back(with_types(shape, activation, output));
  return problems;
}

std::vector<GemmProblem> doctor_canary_targets(const Backend& backend, const DeviceInfo& device,
                                               const std::vector<ActivationType>& activations, DType output) {
  for (ActivationType activation : activations) {
    std::vector<GemmProblem> targets;
    std::vector<std::string> kernels;
    for (const GemmProblem& problem : doctor_canary_problems(activation, output)) {
      if (!backend.check(problem, device)) continue;
      const std::string kernel = backend.kernel_name(problem, device);
      if (std::find(kernels.begin(), kernels.end(), kernel) != kernels.end()) continue;
      kernels.push_back(kernel);
      targets.push_back(problem);
    }
    if (!targets.empty()) return targets;
  }
  return {};
}

}  // namespace fp4gemm::dispatch
