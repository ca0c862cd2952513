#pragma once
// A test-only MoE backend: the right answer through `ref` except for the one fault it is built with,
// and a count of how often it was asked to work (the MoE form of tests/dispatch/faulty_backends.hpp).
#include <atomic>
#include <string>

#include "moe/ref_moe_backend.hpp"

namespace fp4gemm::moe::testing {

enum class MoeFault {
  none,
  wrong_numbers,     // every output element times 1.5: returns normally, but wrong
  nan,               // NaN everywhere
  throw_in_run,      // Error(backend_failure), e.g. a kernel launch failing
  throw_in_prepare,  // Error(backend_failure) from prepare(), e.g. an upload failing
};

class FaultyMoeBackend final : public MoeBackend {
 public:
  FaultyMoeBackend(std::string name, MoeFault fault) : name_(std::move(name)), fault_(fault) {}
  std::string name() const override { return name_; }
  std::string summary() const override { return "test MoE backend with an injected fault"; }
  Memory memory() const override { return Memory::host; }
  CheckResult check_device(const DeviceInfo& device) const override { return reference_.check_device(device); }
  CheckResult check_problem(const MoeProblem& problem, const DeviceInfo& device) const override {
    return reference_.check_problem(problem, device);
  }
  std::unique_ptr<PreparedMoe> prepare(const MoeWeights& weights, const DeviceInfo& device) override;
  void run(const MoeCall& call, const PreparedMoe& layer, const MutableDenseView& out, const RunContext& context) override;

  std::atomic<int> prepares{0};
  std::atomic<int> runs{0};

 private:
  std::string name_;
  MoeFault fault_;
  RefMoeBackend reference_;
};

}  // namespace fp4gemm::moe::testing
