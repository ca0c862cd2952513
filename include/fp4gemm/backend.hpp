#pragma once
// The interface every backend implements: a name, requirement checks that say why not,
// weight preparation into the backend's own layout (once per weight), and run (per call).
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "fp4gemm/device.hpp"
#include "fp4gemm/error.hpp"
#include "fp4gemm/types.hpp"

namespace fp4gemm {

// ok, or a sentence saying why not ("requires a CUDA GPU of SM 9.0; this is SM 8.0").
struct CheckResult {
  bool ok = true;
  std::string reason;

  static CheckResult pass() { return {true, {}}; }
  static CheckResult fail(std::string why) { return {false, std::move(why)}; }
  explicit operator bool() const { return ok; }
};

// A weight in one backend's layout. Owned by the caller; holds its own (host or device) memory
// and frees it on destruction. Immutable after prepare(), so runs may share it.
class PreparedWeight {
 public:
  virtual ~PreparedWeight() = default;
  std::int64_t rows = 0;  // N
  std::int64_t cols = 0;  // K
  std::string backend;    // the backend whose layout this is
  int device = 0;
  // Bytes this layout keeps for as long as it lives (in the backend's memory()): what
  // Backend::residency() promised for these dimensions.
  std::int64_t resident_bytes = 0;
};

// What a backend keeps per prepared weight, known before it prepares one: explain prints it, the
// runner adds it up, and `auto` never picks a backend that keeps a dense copy. NVFP4 exists so that
// a model fits (a 397B-parameter model is ~223 GB in NVFP4, ~794 GB in BF16); a backend that
// trades that away must say so here.
struct WeightResidency {
  std::int64_t bytes = 0;   // kept per prepared weight of the given dimensions
  Memory memory = Memory::host;
  bool dense_copy = false;  // holds the weight as BF16/FP16/FP32 (>= 2 B/element)
  std::string layout;       // one phrase: "NVFP4 records for the kernels, 0.5625 B/element"
};

// Where a run executes: the CUDA stream (a cudaStream_t, null for the default stream) for GPU
// backends. CPU backends use their own thread pool.
struct RunContext {
  void* cuda_stream = nullptr;
};

class Backend {
 public:
  virtual ~Backend() = default;

  virtual std::string name() const = 0;
  virtual std::string summary() const = 0;  // one line for `fp4gemm info`
  virtual Memory memory() const = 0;        // where operands and output must live

  // Can it run on this device at all (device kind, SM, code in the binary, libraries)?
  virtual CheckResult check_device(const DeviceInfo& device) const = 0;
  // Can it serve this problem on this device (dtypes, shapes, alignment, memory)?
  virtual CheckResult check_problem(const GemmProblem& problem, const DeviceInfo& device) const = 0;
  CheckResult check(const GemmProblem& problem, const DeviceInfo& device) const {
    CheckResult device_check = check_device(device);
    return device_check ? check_problem(problem, device) : device_check;
  }

  // Which of its kernels, in which launch shape, it would run for this problem on this device, and
  // the rule that picks them: one line for `fp4gemm explain`. Empty for a backend with one path.
  virtual std::string kernel_plan(const GemmProblem& /*problem*/, const DeviceInfo& /*device*/) const { return {}; }

  // Which of its separately written kernels would serve this problem on this device ("wgmma"):
  // the runner's canary proves each one before it first serves, and quarantines only the kernel
  // whose canary fails. Empty for a backend with one path.
  virtual std::string kernel_name(const GemmProblem& /*problem*/, const DeviceInfo& /*device*/) const { return {}; }

  // What prepare() keeps for a weight of rows x cols (PreparedWeight::resident_bytes equals `bytes`).
  virtual WeightResidency residency(std::int64_t rows, std::int64_t cols) const = 0;

  // The scratch memory one run() of this problem allocates and frees again (stream-ordered on the
  // GPU), beyond the operands: bounded by the backend and documented with it.
  // An upper bound, for explain.
  virtual std::int64_t workspace_bytes(const GemmProblem& /*problem*/, const DeviceInfo& /*device*/) const { return 0; }

  // Convert a checkpoint-layout weight into this backend's layout (and device memory).
  virtual std::unique_ptr<PreparedWeight> prepare(const Nvfp4View& weight, const DeviceInfo& device) = 0;

  // out = alpha * a * w^T. Validates arguments first and throws Error with nothing written on
  // bad input. `a`, `out` live in memory(); M = 0 is a valid no-op.
  virtual void run(const ActivationView& a, const PreparedWeight& weight, float alpha,
                   const MutableDenseView& out, const RunContext& context) = 0;
};

// Argument checks shared by every backend's run(): shapes agree, K % 16 == 0, buffers present,
// strides valid, dtypes supported, memory where the backend wants it. Throws Error on failure.
GemmProblem validate_gemm(const ActivationView& a, const PreparedWeight& weight,
                          const MutableDenseView& out, Memory expected_memory);

// The backend's own view of a prepared weight; a weight prepared by another backend is an error.
template <class Prepared>
const Prepared& prepared_as(const PreparedWeight& weight, const std::string& backend) {
  const auto* prepared = dynamic_cast<const Prepared*>(&weight);
  if (prepared == nullptr) {
    throw_invalid("the weight was prepared by backend '" + weight.backend + "', not '" + backend +
                  "': call prepare() on the backend that runs it");
  }
  return *prepared;
}

// Checks a weight view before preparation (K % 16, buffers, NaN scales when on the host).
void validate_weight(const Nvfp4View& weight);

}  // namespace fp4gemm
