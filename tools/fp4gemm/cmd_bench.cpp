// `fp4gemm bench`: time backends and their peers in one run, against a roofline measured in it.
#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/bench.hpp"
#include "command.hpp"
#include "type_options.hpp"
#include "fp4gemm/dispatch/device_arguments.hpp"
#include "fp4gemm/fp4gemm.hpp"
#include "fp4gemm/runner.hpp"

namespace fp4gemm::cli {
namespace {

struct BenchOptions {
  // -m and --shapes as typed, one string per occurrence, each a comma-separated list (split here,
  // not by CLI11, whose delimiter drops empty items: "64x256,,48x32" benched two shapes silently).
  std::vector<std::string> m_lists{"1,16,256"};
  std::int64_t n = 12288;
  std::int64_t k = 4096;
  // N x K weight shapes, each benched at every M in one run (one ceiling measurement); when set, they
  // replace -n and -k.
  std::vector<std::string> shape_lists;
  std::string backend;  // empty: every backend that can run on the device, except `ref`
  std::string activation = "bf16";
  std::string output = "bf16";
  std::string device = "auto";  // auto: the first GPU if any, else the CPU
  bool json = false;
  bool no_peers = false;
};

std::vector<std::string> backends_for(const BenchOptions& options, const DeviceInfo& device) {
  if (!options.backend.empty()) {
    make_backend(options.backend);  // throws with the valid names when unknown
    return {options.backend};
  }
  std::vector<std::string> names;
  for (const auto& backend : make_all_backends())
    if (backend->name() != "ref" && backend->check_device(device)) names.push_back(backend->name());
  return names;
}

void print_table(const std::vector<bench::Result>& results, const bench::Ceilings& ceilings, const std::string& device) {
  std::printf("device: %s\n", device.c_str());
  std::printf("ceilings: %.1f GB/s (%s); %.3f TFLOP/s (%s)\n", ceilings.bandwidth_gbps, ceilings.bandwidth_method.c_str(),
              ceilings.compute_tflops, ceilings.compute_method.c_str());
  std::printf("%-22s %6s %6s %6s %11s %9s %11s %9s %10s\n", "backend", "M", "N", "K", "us", "TFLOP/s", "weight GB/s",
              "roofline", "x fastest peer");
  for (const bench::Result& result : results) {
    if (!result.ok) {
      std::printf("%-22s %6lld %6lld %6lld  skipped: %s\n", result.backend.c_str(), (long long)result.problem.m,
                  (long long)result.problem.n, (long long)result.problem.k, result.note.c_str());
      continue;
    }
    double fastest_peer = 0;
    for (const bench::Result& other : results)
      if (other.peer && !other.floor && other.ok && other.problem == result.problem)
        fastest_peer = fastest_peer == 0 ? other.time_us : std::min(fastest_peer, other.time_us);
    const double fraction = bench::roofline_us(result.problem, ceilings) / result.time_us;
    char speedup[32] = "-";
    if (!result.peer && fastest_peer > 0) std::snprintf(speedup, sizeof speedup, "%.2fx", fastest_peer / result.time_us);
    std::printf("%-22s %6lld %6lld %6lld %11.1f %9.3f %11.1f %9.3f %10s\n",
                (result.backend + (result.floor ? " (floor)" : result.peer ? " (peer)" : "")).c_str(),
                (long long)result.problem.m, (long long)result.problem.n, (long long)result.problem.k, result.time_us,
                result.tflops(), result.weight_gbps(), fraction, speedup);
  }
  std::printf("roofline = max(minimal bytes / bandwidth, FLOPs / compute rate) / measured time; 1.0 is the limit.\n");
  if (std::any_of(results.begin(), results.end(), [](const bench::Result& result) { return result.floor; })) {
    std::printf("floor = a kernel that only reads the weight bytes, timed the same way: about the least any call can take.\n");
  }
}

void print_json(const std::vector<bench::Result>& results, const bench::Ceilings& ceilings, const std::string& device) {
  for (const bench::Result& result : results) {
    nlohmann::json line{{"device", device},
                        {"backend", result.backend},
                        {"peer", result.peer},
                        {"m", result.problem.m},
                        {"n", result.problem.n},
                        {"k", result.problem.k},
                        {"activation", to_string(result.problem.activation)},
                        {"output", to_string(result.problem.output)},
                        {"ok", result.ok},
                        {"note", result.note}};
    if (result.floor) line["floor"] = true;
    if (!result.kernel.empty()) line["kernel"] = result.kernel;
    if (result.ok) {
      line["time_us"] = result.time_us;
      line["tflops"] = result.tflops();
      line["weight_gbps"] = result.weight_gbps();
      line["roofline_us"] = bench::roofline_us(result.problem, ceilings);
      line["roofline_fraction"] = bench::roofline_us(result.problem, ceilings) / result.time_us;
      line["spread"] = result.spread;
      line["repeats"] = result.repeats;
    }
    line["bandwidth_gbps"] = ceilings.bandwidth_gbps;
    line["compute_tflops"] = ceilings.compute_tflops;
    std::printf("%s\n", line.dump().c_str());
  }
}

struct WeightShape {
  std::int64_t n = 0, k = 0;
};

void check_weight_shape(const WeightShape& shape, const std::string& source) {
  if (shape.n < 1 || shape.k < 16) throw_invalid(source + ": N must be >= 1 and K >= 16");
  if (shape.k % 16 != 0) throw_invalid(source + ": K = " + std::to_string(shape.k) + " is not a multiple of 16, the NVFP4 block size");
  // The bench draws the weight as FP32 values on the host and quantizes it there: say so before
  // an allocation fails.
  const double host_bytes = double(shape.n) * double(shape.k) * (4.0 + 0.5625);
  const double memory_bytes = double(probe_cpu().memory_bytes);
  if (memory_bytes > 0 && host_bytes > memory_bytes) {
    char message[160];
    std::snprintf(message, sizeof message, ": a %lld x %lld weight needs %.0f GiB of host memory to make, this machine has %.0f GiB",
                  (long long)shape.n, (long long)shape.k, host_bytes / (1 << 30), memory_bytes / (1 << 30));
    throw_invalid(source + message);
  }
}

// Decimal digits only (at most 15, so that std::stoll cannot overflow).
bool all_digits(const std::string& part) {
  return !part.empty() && part.size() <= 15 && std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// The items of comma-separated lists, in order; an empty item is an error.
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

// "NxK", e.g. 12288x4096: decimal digits on both sides of one 'x', nothing else.
WeightShape parse_weight_shape(const std::string& text) {
  const auto not_a_shape = [&] { throw_invalid("--shapes: '" + text + "' is not NxK (e.g. 12288x4096)"); };
  const std::size_t cross = text.find('x');
  if (cross == std::string::npos || !all_digits(text.substr(0, cross)) || !all_digits(text.substr(cross + 1))) not_a_shape();
  const WeightShape shape{std::stoll(text.substr(0, cross)), std::stoll(text.substr(cross + 1))};
  check_weight_shape(shape, "--shapes " + text);
  return shape;
}

void run_bench(const BenchOptions& options) {
  std::vector<WeightShape> shapes;
  if (options.shape_lists.empty()) {
    shapes.push_back({options.n, options.k});
    check_weight_shape(shapes.back(), "-n/-k");
  }
  for (const std::string& text : list_items(options.shape_lists, "--shapes")) shapes.push_back(parse_weight_shape(text));
  std::vector<std::int64_t> ms;
  for (const std::string& text : list_items(options.m_lists, "-m")) {
    ms.push_back(all_digits(text) ? std::stoll(text) : 0);
    if (ms.back() < 1) throw_invalid("-m: '" + text + "' is not a whole number >= 1");
  }
  const ActivationType activation = parse_activation(options.activation);
  const DType output = parse_output(options.output);
  std::vector<GemmProblem> problems;  // shape by shape (the GPU bench then makes each weight once)
  for (const WeightShape& shape : shapes)
    for (std::int64_t m : ms) problems.push_back({m, shape.n, shape.k, activation, output});

  const auto gpus = probe_cuda_devices();
  RunnerOptions device_choice;  // the same --device forms as explain and doctor
  dispatch::apply_device_arguments(device_choice, options.device, 0, 0);
  const bool use_gpu = device_choice.device == RunnerOptions::kFirstGpu ? !gpus.empty()
                                                                        : device_choice.device != RunnerOptions::kCpuOnly;
  bench::Ceilings ceilings;
  std::vector<bench::Result> results;
  std::string device_name;
  if (use_gpu) {
#ifdef FP4GEMM_WITH_CUDA
    const int index = device_choice.device == RunnerOptions::kFirstGpu ? 0 : device_choice.device;
    if (index < 0 || index >= int(gpus.size())) throw_invalid("no CUDA device " + std::to_string(index) + ": " + cuda_unavailable_reason());
    device_name = gpus[std::size_t(index)].to_string();
    ceilings = bench::measure_gpu_ceilings(index);
    results = bench::bench_gpu(index, problems, backends_for(options, gpus[std::size_t(index)]), !options.no_peers);
#else
    throw_invalid("this build has no CUDA support; use --device cpu");
#endif
  } else {
    const DeviceInfo cpu = probe_cpu();
    device_name = cpu.to_string();
    ceilings = bench::measure_cpu_ceilings();
    results = bench::bench_cpu(problems, backends_for(options, cpu), !options.no_peers);
  }
  if (options.json) {
    print_json(results, ceilings, device_name);
  } else {
    print_table(results, ceilings, device_name);
  }
}

const RegisterCommand registration([](CLI::App& app) {
  auto options = std::make_shared<BenchOptions>();
  auto* command = app.add_subcommand("bench", "Time backends and peers on weight shapes against a measured roofline");
  command->add_option("-m", options->m_lists, "Activation rows, comma-separated (default 1,16,256)");
  auto* n = command->add_option("-n", options->n, "Weight rows N (default 12288)");
  auto* k = command->add_option("-k", options->k, "Reduction size K, a multiple of 16 (default 4096)");
  command->add_option("--shapes", options->shape_lists, "Weight shapes NxK, comma-separated (e.g. 4096x4096,28672x8192), instead of -n/-k")
      ->excludes(n)
      ->excludes(k);
  command->add_option("--backend", options->backend, "Only this backend (default: all that can run, except ref)");
  command->add_option("--activation", options->activation, "bf16 (W4A16, default), f32 or nvfp4 (W4A4)");
  command->add_option("--output", options->output, "bf16 (default), f16 or f32");
  command->add_option("--device", options->device, "auto (default: the first GPU, else the CPU), cpu, I or cuda:I");
  command->add_flag("--json", options->json, "One JSON object per result line");
  command->add_flag("--no-peers", options->no_peers, "Skip the peer libraries (OpenBLAS, cuBLAS) and the GPU stream floor");
  command->callback([options] { run_bench(*options); });
});

}  // namespace
}  // namespace fp4gemm::cli
