#pragma once
// Test-only backends for the runner's tests: each one computes the right answer through `ref`
// except for the one fault it is built with, and counts how often it was asked to work.
// Also stand-ins with the documented requirements of the GPU backends, for resolution tables on
// simulated devices (they report GPU memory, so the runner checks them against the simulated GPU;
// tests only explain with them, they are never run).
#include <atomic>
#include <functional>
#include <memory>
#include <string>

#include "backends/ref/ref_backend.hpp"
#include "fp4gemm/backend.hpp"

namespace fp4gemm::testing {

enum class Fault {
  none,
  zeros,                // writes 0 everywhere
  nan,                  // writes NaN everywhere
  half_output,          // writes only the first half of the rows, returns normally
  throw_in_run,         // Error(backend_failure), e.g. a cuBLAS status
  throw_in_prepare,     // Error(backend_failure) from prepare(), e.g. an upload failing
  partial_then_throw,   // writes garbage into half the output, then throws
  out_of_memory,        // std::bad_alloc from run()
  foreign_exception,    // throws an int (not a std::exception)
  unrecoverable,        // Error(unrecoverable): a sticky CUDA error
};

class FaultyBackend final : public Backend {
 public:
  // `memory`: Memory::cuda makes the runner treat it as a GPU backend (staging operands for it);
  // only the faults that never touch the operands (throw_*, out_of_memory, ...) make sense then.
  FaultyBackend(std::string name, Fault fault, Memory memory = Memory::host)
      : name_(std::move(name)), fault_(fault), memory_(memory) {}
  std::string name() const override { return name_; }
  std::string summary() const override { return "test backend with an injected fault"; }
  Memory memory() const override { return memory_; }
  CheckResult check_device(const DeviceInfo&) const override { return CheckResult::pass(); }
  CheckResult check_problem(const GemmProblem& problem, const DeviceInfo&) const override {
    return problem.k % 16 == 0 ? CheckResult::pass() : CheckResult::fail("K must be a multiple of 16");
  }
  WeightResidency residency(std::int64_t rows, std::int64_t cols) const override {
    return reference_.residency(rows, cols);
  }
  std::unique_ptr<PreparedWeight> prepare(const Nvfp4View& weight, const DeviceInfo& device) override;
  void run(const ActivationView& a, const PreparedWeight& weight, float alpha, const MutableDenseView& out,
           const RunContext& context) override;

  std::atomic<int> prepares{0};
  std::atomic<int> runs{0};

 private:
  std::string name_;
  Fault fault_;
  Memory memory_;
  RefBackend reference_;
};

// A backend with two separately written kernels chosen by M, as cuda_nvfp4 chooses among its own:
// "small" for M <= kSmallKernelMaxRows, "large" above. The small kernel computes the right answer;
// the large one has the fault it is built with. Counts each kernel's runs.
class TwoKernelBackend final : public Backend {
 public:
  static constexpr std::int64_t kSmallKernelMaxRows = 8;
  TwoKernelBackend(std::string name, Fault large_kernel_fault)
      : name_(name), small_(name, Fault::none), large_(name, large_kernel_fault) {}
  std::string name() const override { return name_; }
  std::string summary() const override { return "test backend whose large-M kernel has an injected fault"; }
  Memory memory() const override { return Memory::host; }
  CheckResult check_device(const DeviceInfo& device) const override { return small_.check_device(device); }
  CheckResult check_problem(const GemmProblem& problem, const DeviceInfo& device) const override {
    return small_.check_problem(problem, device);
  }
  std::string kernel_name(const GemmProblem& problem, const DeviceInfo&) const override {
    return problem.m <= kSmallKernelMaxRows ? "small" : "large";
  }
  WeightResidency residency(std::int64_t rows, std::int64_t cols) const override { return small_.residency(rows, cols); }
  std::unique_ptr<PreparedWeight> prepare(const Nvfp4View& weight, const DeviceInfo& device) override {
    return small_.prepare(weight, device);
  }
  void run(const ActivationView& a, const PreparedWeight& weight, float alpha, const MutableDenseView& out,
           const RunContext& context) override {
    FaultyBackend& kernel = a.rows() <= kSmallKernelMaxRows ? small_ : large_;
    kernel.run(a, weight, alpha, out, context);
  }
  int small_runs() const { return small_.runs; }
  int large_runs() const { return large_.runs; }

 private:
  std::string name_;
  FaultyBackend small_;
  FaultyBackend large_;
};

// A host-executable stand-in whose checks (and, optionally, kernel names) are given as functions:
// lets a test put the names of GPU backends (cuda_nvfp4, ...) with their documented requirements
// into a simulated runner, or give a backend kernels chosen by a rule. It computes through `ref`
// and reports ref's residency, or a BF16 copy's (2 B/element, dense_copy) when `dense_copy`.
class StandInBackend final : public Backend {
 public:
  using DeviceCheck = std::function<CheckResult(const DeviceInfo&)>;
  using ProblemCheck = std::function<CheckResult(const GemmProblem&, const DeviceInfo&)>;
  using KernelName = std::function<std::string(const GemmProblem&)>;
  StandInBackend(std::string name, Memory memory, DeviceCheck device_check, ProblemCheck problem_check,
                 KernelName kernel_name = {}, bool dense_copy = false)
      : name_(std::move(name)), memory_(memory), device_check_(std::move(device_check)),
        problem_check_(std::move(problem_check)), kernel_name_(std::move(kernel_name)), dense_copy_(dense_copy) {}
  std::string name() const override { return name_; }
  std::string summary() const override { return "stand-in with a GPU backend's requirements"; }
  Memory memory() const override { return memory_; }
  CheckResult check_device(const DeviceInfo& device) const override { return device_check_(device); }
  CheckResult check_problem(const GemmProblem& problem, const DeviceInfo& device) const override {
    return problem_check_(problem, device);
  }
  std::string kernel_name(const GemmProblem& problem, const DeviceInfo&) const override {
    return kernel_name_ ? kernel_name_(problem) : "";
  }
  WeightResidency residency(std::int64_t rows, std::int64_t cols) const override {
    if (dense_copy_) return {rows * cols * 2, memory_, true, "a BF16 copy of the weight (stand-in)"};
    WeightResidency residency = reference_.residency(rows, cols);
    residency.memory = memory_;
    return residency;
  }
  std::unique_ptr<PreparedWeight> prepare(const Nvfp4View& weight, const DeviceInfo& device) override {
    auto prepared = reference_.prepare(weight, device);
    prepared->resident_bytes = residency(weight.rows, weight.cols).bytes;
    return prepared;
  }
  void run(const ActivationView& a, const PreparedWeight& weight, float alpha, const MutableDenseView& out,
           const RunContext& context) override {
    reference_.run(a, weight, alpha, out, context);
  }

 private:
  std::string name_;
  Memory memory_;
  DeviceCheck device_check_;
  ProblemCheck problem_check_;
  KernelName kernel_name_;
  bool dense_copy_ = false;
  RefBackend reference_;
};

// The GPU backends as the resolution tests see them: cublaslt with its real requirement checks
// (cublaslt_requirements.hpp), cuda_nvfp4 and cuda_dequant_cublas with their documented limits
// (SM >= 8.0; cuda_nvfp4 M <= 64 except on SM 9.0, and no FP32 activations).
std::shared_ptr<Backend> cublaslt_stand_in();
std::shared_ptr<Backend> cuda_nvfp4_stand_in();
std::shared_ptr<Backend> cuda_dequant_cublas_stand_in();
// cuda_bf16_copy: cuda_dequant_cublas's checks, keeping a BF16 copy of the weight.
std::shared_ptr<Backend> cuda_bf16_copy_stand_in();

// A simulated GPU: SM major.minor, a name, cuBLASLt version (0: absent), never probed.
DeviceInfo simulated_gpu(int sm_major, int sm_minor, int cublaslt_version = 130100, const std::string& name = "");

}  // namespace fp4gemm::testing
