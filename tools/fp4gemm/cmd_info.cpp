// `fp4gemm info`: this machine, its devices, and every backend compiled in with whether it can run.
#include <cstdio>

#include <nlohmann/json.hpp>

#include "command.hpp"
#include "reports.hpp"
#include "fp4gemm/fp4gemm.hpp"

namespace fp4gemm::cli {
namespace {

void run_info(bool as_json) {
  if (as_json) {
    std::printf("%s\n", info_report().dump(2).c_str());
    return;
  }
  const auto gpus = probe_cuda_devices();
  const auto backends = make_all_backends();
  std::vector<DeviceInfo> devices{probe_cpu()};
  devices.insert(devices.end(), gpus.begin(), gpus.end());
  std::printf("fp4gemm %s\n\nBackends compiled in:\n", "0.1.0");
  for (const auto& backend : backends) std::printf("  %-22s %s\n", backend->name().c_str(), backend->summary().c_str());
  if (gpus.empty()) std::printf("\nCUDA: %s\n", cuda_unavailable_reason().c_str());
  for (const auto& device : devices) {
    std::printf("\n%s\n", device.to_string().c_str());
    for (const auto& backend : backends) {
      const CheckResult check = backend->check_device(device);
      std::printf("  %-22s %s\n", backend->name().c_str(), check.ok ? "can run" : ("cannot run: " + check.reason).c_str());
    }
  }
}

const RegisterCommand registration([](CLI::App& app) {
  auto* command = app.add_subcommand("info", "Show the CPU, CUDA devices and each backend compiled in, with whether it can run here");
  auto as_json = std::make_shared<bool>(false);
  command->add_flag("--json", *as_json, "Print one JSON document");
  command->callback([as_json] { run_info(*as_json); });
});

}  // namespace
}  // namespace fp4gemm::cli
