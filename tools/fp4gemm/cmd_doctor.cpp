// `fp4gemm doctor`: run every backend's canary on this machine (a small random problem checked
// against `ref`; one per kernel of a backend with several) and report which backends and kernels
// are healthy, quarantined, or cannot run here. Exits non-zero when one that can run here fails.
#include <algorithm>
#include <cstdio>
#include <memory>

#include <nlohmann/json.hpp>

#include "command.hpp"
#include "dispatch/device_arguments.hpp"
#include "fp4gemm/error.hpp"
#include "fp4gemm/runner.hpp"

namespace fp4gemm::cli {
namespace {

struct DoctorOptions {
  std::string device = "auto";
  int simulate_sm = 0;
  int simulate_cublaslt = 130100;
  bool json = false;
};

void run_doctor(const DoctorOptions& options) {
  RunnerOptions runner_options;
  dispatch::apply_device_arguments(runner_options, options.device, options.simulate_sm, options.simulate_cublaslt);
  Runner runner(std::move(runner_options));
  const std::vector<CanaryReport> reports = runner.run_all_canaries(ActivationType::bf16, DType::f32);

  int failed = 0;
  nlohmann::json report{{"device", runner.device().to_string()}, {"host_device", runner.host_device().to_string()},
                        {"backends", nlohmann::json::array()}};
  for (const auto& canary : reports) {
    failed += canary.ran && !canary.passed;
    const char* status = !canary.ran ? "cannot run" : canary.passed ? "healthy" : "quarantined";
    report["backends"].push_back({{"backend", canary.backend}, {"kernel", canary.kernel}, {"status", status},
                                  {"canary", canary.problem}, {"reason", canary.reason},
                                  {"coverage_gap", canary.coverage_gap}});
  }
  report["failed"] = failed;
  if (options.json) {
    std::printf("%s\n", report.dump(2).c_str());
  } else {
    std::printf("device: %s\nhost:   %s\n\n", runner.device().to_string().c_str(), runner.host_device().to_string().c_str());
    // "cuda_nvfp4 (wgmma kernel)" for a backend's kernel, as Runner::quarantined() names it.
    int width = 22;
    for (const auto& canary : reports) width = std::max(width, int(quarantine_key(canary.backend, canary.kernel).size()));
    for (const auto& canary : reports) {
      const std::string subject = quarantine_key(canary.backend, canary.kernel);
      if (!canary.ran) {
        std::printf("  %-*s cannot run: %s\n", width, subject.c_str(), canary.reason.c_str());
      } else if (canary.passed) {
        std::printf("  %-*s healthy (canary %s matches ref)\n", width, subject.c_str(), canary.problem.c_str());
      } else {
        std::printf("  %-*s QUARANTINED: %s\n", width, subject.c_str(), canary.reason.c_str());
      }
      if (!canary.coverage_gap.empty()) std::printf("  %-*s note: %s\n", width, "", canary.coverage_gap.c_str());
    }
  }
  if (failed > 0) {
    throw Error(ErrorCode::backend_failure, std::to_string(failed) +
                                                " backend(s) or kernel(s) failed their canary and would be quarantined; "
                                                "report the reason above with `fp4gemm info` output");
  }
}

const RegisterCommand registration([](CLI::App& app) {
  auto options = std::make_shared<DoctorOptions>();
  auto* command = app.add_subcommand("doctor", "Check every backend against the reference on a small random problem");
  command->add_option("--device", options->device, "auto (default: the first GPU, else the CPU), cpu, I or cuda:I");
  command->add_option("--simulate-sm", options->simulate_sm, "Use a simulated GPU of this SM (its GPU backends cannot run)");
  command->add_option("--simulate-cublaslt", options->simulate_cublaslt, "cuBLASLt version of the simulated GPU (default 130100)");
  command->add_flag("--json", options->json, "Print one JSON document");
  command->callback([options] { run_doctor(*options); });
});

}  // namespace
}  // namespace fp4gemm::cli
