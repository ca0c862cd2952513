#pragma once
// Which problems the canary runs. A backend may have several separately written kernels chosen by
// shape (Backend::kernel_name: cuda_nvfp4's mma.sync, wgmma, prefill); each kernel must be proven
// before it first serves, so the canary of a served problem runs the first problem of a ladder
// that takes the same kernel. canary.cpp runs and judges the problem chosen here.
#include <optional>
#include <string>
#include <vector>

#include "fp4gemm/backend.hpp"

namespace fp4gemm::dispatch {

// The canary problems for `served`, in the order they are tried, each with its operand types:
// 16x64x256 and 1x64x256, then with M' = min(M, 256): M'x64x256, M'xNx256, M'x64xK, min(M, 16)xNxK
// (the last resort of backends that take only particular shapes), M'xNxK, then the doctor's
// kernel probes 48x8192x256 and 256x64x256 (doctor_canary_problems). A problem of more
// multiply-adds than the cost cap (kCanaryMaxMultiplyAdds: the CPU reference must stay cheap) is
// left out, except the last resort. No problem appears twice.
std::vector<GemmProblem> canary_candidates(const GemmProblem& served);

// The canary problem for `served`: the first candidate the backend accepts on `device` that
// takes the served problem's kernel; else the first it accepts (then `reaches_kernel` is false).
struct CanaryChoice {
  std::optional<GemmProblem> problem;  // none when the backend accepts no candidate
  std::string kernel;                  // the kernel `served` takes: the one to prove
  std::string problem_kernel;          // the kernel `problem` takes (== kernel when reaches_kernel)
  bool reaches_kernel = false;
  std::string rejection;               // why the backend refused the first candidate
};
CanaryChoice choose_canary_problem(const Backend& backend, const DeviceInfo& device, const GemmProblem& served);

// The problems `fp4gemm doctor` probes every backend with, in this order, with the given operand
// types: 16x64x256 and 1x64x256 (small-M kernels), 48x8192x256 (cuda_nvfp4's wgmma on SM 9.0),
// 256x64x256 (its prefill kernel).
std::vector<GemmProblem> doctor_canary_problems(ActivationType activation, DType output);

// For the doctor: one of doctor_canary_problems() per distinct kernel the backend takes for those
// it accepts, in order (one for a backend with one path), under the first of `activations` for
// which it accepts any of them (W4A4-only backends refuse BF16). Empty when it accepts none.
std::vector<GemmProblem> doctor_canary_targets(const Backend& backend, const DeviceInfo& device,
                                               const std::vector<ActivationType>& activations, DType output);

}  // namespace fp4gemm::dispatch
