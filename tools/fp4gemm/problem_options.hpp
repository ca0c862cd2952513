#pragma once
// What `bench` and `tune` share: parsing M lists and weight shapes, choosing the device and the
// backends, and running the benchmark engine on them.
#include <cstdint>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "bench/bench.hpp"
#include "fp4gemm/device.hpp"

namespace fp4gemm::cli {

struct WeightShape {
  std::int64_t n = 0, k = 0;
};

// Throws Error(invalid_argument) naming `source` when N < 1, K < 16, K % 16 != 0 or the weight
// cannot be made in host memory.
void check_weight_shape(const WeightShape& shape, const std::string& source);

// The items of comma-separated lists (one string per occurrence of `flag`), in order; an empty
// item is an error.
std::vector<std::string> list_items(const std::vector<std::string>& lists, const std::string& flag);

// "NxK", e.g. 12288x4096, checked with check_weight_shape.
WeightShape parse_weight_shape(const std::string& text);

// The distinct GEMM weight shapes of a model's config.json (or its directory), per GPU of a
// tensor-parallel group of `tp` (io/model_config.hpp), each checked with check_weight_shape; says
// on stderr, for `command`, what it derived from which layers.
std::vector<WeightShape> config_shapes(const std::string& config, int tp, const std::string& command);

// Adds --config (a model's config.json, or its directory; `what` says what the command does with
// its GEMMs) and --tp (which needs it) to `command`; returns the --config option, for excludes.
CLI::Option* add_model_config_options(CLI::App* command, std::string& config, int& tp, const std::string& what);

// Whole numbers >= 1 from `-m` lists.
std::vector<std::int64_t> parse_m_list(const std::vector<std::string>& lists);

// Whether `device_text` (auto, cpu, I or cuda:I) means a GPU here: auto does when one is present.
bool resolves_to_gpu(const std::string& device_text);

// The CUDA device `device_text` (auto, I or cuda:I) names, auto meaning the first; throws
// Error(invalid_argument) when there is no such device.
DeviceInfo gpu_device(const std::string& device_text);

// One benchmark run: the device it ran on, the ceilings measured there and every result.
struct BenchRun {
  std::string device_name;
  DeviceInfo device;  // the GPU, or the CPU
  bench::Ceilings ceilings;
  std::vector<bench::Result> results;
};

// Runs `problems` (ordered shape by shape) on `device_text` (auto, cpu, I or cuda:I) with
// `backend` alone, or every backend that can run there except `ref` when it is empty; the peers
// too unless `no_peers`.
BenchRun run_benchmark(const std::string& device_text, const std::vector<GemmProblem>& problems, const std::string& backend,
                       bool no_peers);

}  // namespace fp4gemm::cli
