#include "problem_options.hpp"

#include <algorithm>
#include <cstdio>
#include <set>

#include "dispatch/device_arguments.hpp"
#include "fp4gemm/fp4gemm.hpp"
#include "fp4gemm/io/model_config.hpp"
#include "fp4gemm/runner.hpp"

namespace fp4gemm::cli {
namespace {

// Decimal digits only (at most 15, so that std::stoll cannot overflow).
bool all_digits(const std::string& part) {
  return !part.empty() && part.size() <= 15 && std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
}

std::vector<std::string> backends_for(const std::string& backend, const DeviceInfo& device) {
  if (!backend.empty()) {
    make_backend(backend);  // throws with the valid names when unknown
    if (const std::string warning = deprecated_backend_warning(backend); !warning.empty()) {
      std::fprintf(stderr, "fp4gemm: warning: %s\n", warning.c_str());
    }
    return {current_backend_name(backend)};
  }
  std::vector<std::string> names;
  for (const auto& candidate : make_all_backends())
    if (candidate->name() != "ref" && candidate->check_device(device)) names.push_back(candidate->name());
  return names;
}

}  // namespace

void check_weight_shape(const WeightShape& shape, const std::string& source) {
  if (shape.n < 1 || shape.k < 16) throw_invalid(source + ": N must be >= 1 and K >= 16");
  if (shape.k % 16 != 0) throw_invalid(source + ": K = " + std::to_string(shape.k) + " is not a multiple of 16, the NVFP4 block size");
  // The bench draws the weight as FP32 values on the host and quantizes it there: say so before
  // an allocation fails.
  const double host_bytes = double(shape.n) * double(shape.k) * (4.0 + kNvfp4BytesPerElement);
  const double memory_bytes = double(probe_cpu().memory_bytes);
  if (memory_bytes > 0 && host_bytes > memory_bytes) {
    char message[160];
    std::snprintf(message, sizeof message, ": a %lld x %lld weight needs %.0f GiB of host memory to make, this machine has %.0f GiB",
                  (long long)shape.n, (long long)shape.k, host_bytes / (1 << 30), memory_bytes / (1 << 30));
    throw_invalid(source + message);
  }
}

std::vector<std::string> list_items(const std::vector<std::string>& lists, const std::string& flag) {
  std::vector<std::string> items;
  for (const std::string& list : lists) {
    std::size_t start = 0;
    while (true) {
      const std::size_t comma = list.find(',', start);
      items.push_back(list.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
      if (items.back().empty()) throw_invalid(flag + ": an empty item in '" + list + "'");
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  return items;
}

CLI::Option* add_model_config_options(CLI::App* command, std::string& config, int& tp, const std::string& what) {
  CLI::Option* option = command->add_option("--config", config, "A model's config.json (or its directory): " + what);
  command->add_option("--tp", tp, "With --config: tensor-parallel GPUs, each running its shard of the shapes (default 1)")
      ->check(CLI::Range(1, 1024))
      ->needs(option);
  return option;
}

std::vector<WeightShape> config_shapes(const std::string& config, int tp, const std::string& command) {
  const io::ModelGemms model = io::gemms_from_config(config, tp);
  std::set<std::pair<std::int64_t, std::int64_t>> seen;
  std::vector<WeightShape> shapes;
  std::string listed;
  for (const io::ModelGemm& gemm : model.gemms) {
    const std::string shape = std::to_string(gemm.n) + "x" + std::to_string(gemm.k);
    check_weight_shape({gemm.n, gemm.k}, "--config " + gemm.layer + " shape " + shape);
    if (seen.insert({gemm.n, gemm.k}).second) shapes.push_back({gemm.n, gemm.k});
    listed += (listed.empty() ? "" : ", ") + gemm.layer + " " + shape;
  }
  std::fprintf(stderr, "%s: --config %s (%s%s): %s\n", command.c_str(), config.c_str(),
               model.model_type.empty() ? "model_type not given" : model.model_type.c_str(),
               tp > 1 ? (", per GPU of " + std::to_string(tp)).c_str() : "", listed.c_str());
  return shapes;
}

WeightShape parse_weight_shape(const std::string& text) {
  const auto not_a_shape = [&] { throw_invalid("--shapes: '" + text + "' is not NxK (e.g. 12288x4096)"); };
  const std::size_t cross = text.find('x');
  if (cross == std::string::npos || !all_digits(text.substr(0, cross)) || !all_digits(text.substr(cross + 1))) not_a_shape();
  const WeightShape shape{std::stoll(text.substr(0, cross)), std::stoll(text.substr(cross + 1))};
  check_weight_shape(shape, "--shapes " + text);
  return shape;
}

std::vector<std::int64_t> parse_m_list(const std::vector<std::string>& lists) {
  std::vector<std::int64_t> ms;
  for (const std::string& text : list_items(lists, "-m")) {
    ms.push_back(all_digits(text) ? std::stoll(text) : 0);
    if (ms.back() < 1) throw_invalid("-m: '" + text + "' is not a whole number >= 1");
  }
  return ms;
}

bool resolves_to_gpu(const std::string& device_text) {
  RunnerOptions device_choice;  // the same --device forms as explain and doctor
  dispatch::apply_device_arguments(device_choice, device_text, 0, 0);
  if (device_choice.device == RunnerOptions::kFirstGpu) return !probe_cuda_devices().empty();
  return device_choice.device != RunnerOptions::kCpuOnly;
}

DeviceInfo gpu_device(const std::string& device_text) {
  RunnerOptions device_choice;
  dispatch::apply_device_arguments(device_choice, device_text, 0, 0);
  const auto gpus = probe_cuda_devices();
  const int index = device_choice.device == RunnerOptions::kFirstGpu ? 0 : device_choice.device;
  if (index < 0 || index >= int(gpus.size())) throw_invalid("no CUDA device " + std::to_string(index) + ": " + cuda_unavailable_reason());
  return gpus[std::size_t(index)];
}

BenchRun run_benchmark(const std::string& device_text, const std::vector<GemmProblem>& problems, const std::string& backend,
                       bool no_peers) {
  BenchRun run;
  if (resolves_to_gpu(device_text)) {
#ifdef FP4GEMM_WITH_CUDA
    run.device = gpu_device(device_text);
    run.device_name = run.device.to_string();
    run.ceilings = bench::measure_gpu_ceilings(run.device.index);
    run.results = bench::bench_gpu(run.device.index, problems, backends_for(backend, run.device), !no_peers);
#else
    throw_invalid("this build has no CUDA support; use --device cpu");
#endif
  } else {
    run.device = probe_cpu();
    run.device_name = run.device.to_string();
    run.ceilings = bench::measure_cpu_ceilings();
    run.results = bench::bench_cpu(problems, backends_for(backend, run.device), !no_peers);
  }
  return run;
}

}  // namespace fp4gemm::cli
