// torch.ops.fp4gemm ops that serve the Python package's load-time and reporting functions:
// load_linear (one ModelOpt NVFP4 layer through the C++ checkpoint loader), info, explain and
// explain_moe (the JSON documents `fp4gemm info --json`, `fp4gemm explain --json` and `fp4gemm
// explain --moe --json` print), and resident (what a prepared weight's layouts hold).
#include <ATen/ATen.h>
#include <torch/library.h>

#include <cstring>
#include <string>

#include "bench/moe_bench.hpp"
#include "dispatch/device_arguments.hpp"
#include "fp4gemm/io/checkpoint.hpp"
#include "fp4gemm/io/modelopt.hpp"
#include "fp4gemm/io/tensor_convert.hpp"
#include "fp4gemm/moe/moe_runner.hpp"
#include "fp4gemm/runner.hpp"
#include "fp4gemm/reports.hpp"
#include "fp4gemm/type_options.hpp"
#include "weight_table.hpp"

namespace fp4gemm::torch_ops {
namespace {

at::Tensor bytes_tensor(const io::TensorView& tensor, std::vector<std::int64_t> shape) {
  at::Tensor out = at::empty(shape, at::TensorOptions().dtype(at::kByte));
  std::memcpy(out.data_ptr(), tensor.data, tensor.bytes().size());
  return out;
}

at::Tensor scalar_or_empty(const std::optional<float>& value) {
  const auto f32 = at::TensorOptions().dtype(at::kFloat);
  return value ? at::full({}, *value, f32) : at::empty({0}, f32);
}

// (codes uint8 [N, K/2], block scales float8_e4m3fn [N, K/16], weight_scale_2 float32 [],
// input_scale float32 [] or [0] when absent, bias float32 [N] or [0] when absent), all on the CPU,
// in ModelOpt's convention whatever the checkpoint's.
std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor> load_linear(c10::string_view directory,
                                                                                c10::string_view prefix) {
  const io::Checkpoint checkpoint = io::Checkpoint::open(std::string(directory));
  const io::Nvfp4Layer layer = io::load_nvfp4_layer(checkpoint, std::string(prefix));
  at::Tensor bias = at::empty({0}, at::TensorOptions().dtype(at::kFloat));
  if (auto found = checkpoint.find(std::string(prefix) + ".bias")) {
    const std::vector<float> values = io::tensor_to_float(*found);
    bias = at::empty({std::int64_t(values.size())}, at::TensorOptions().dtype(at::kFloat));
    std::memcpy(bias.data_ptr(), values.data(), values.size() * sizeof(float));
  }
  return {bytes_tensor(layer.weight, {layer.rows, layer.cols / 2}),
          bytes_tensor(layer.weight_scale, {layer.rows, layer.cols / 16}).view(at::kFloat8_e4m3fn),
          scalar_or_empty(layer.weight_scale_2), scalar_or_empty(layer.input_scale), bias};
}

std::string info() { return cli::info_report().dump(); }

std::string explain(std::int64_t m, std::int64_t n, std::int64_t k, c10::string_view activation,
                    c10::string_view output, c10::string_view backend, c10::string_view device) {
  if (m < 1 || n < 1 || k < 1) throw_invalid("explain: m, n and k must be positive");
  if (k % 16 != 0) throw_invalid("explain: k = " + std::to_string(k) + " is not a multiple of 16, the NVFP4 block size");
  const GemmProblem problem{m, n, k, cli::parse_activation(std::string(activation)), cli::parse_output(std::string(output))};
  RunnerOptions options;
  options.backend = backend == "auto" ? "" : std::string(backend);
  dispatch::apply_device_arguments(options, std::string(device), 0, 0);
  const dispatch::Explanation explanation = Runner(std::move(options)).explain(problem);
  nlohmann::json report = cli::explanation_report(explanation);
  report["text"] = explanation.to_text();
  return report.dump();
}

// An MoE layer of these sizes at `tokens` (routed by its router unless `routing_given`): the MoE
// runner's candidates, choice and the chosen backend's plan, plus "text" as the CLI prints it.
std::string explain_moe(std::int64_t tokens, std::int64_t experts, std::int64_t top_k, std::int64_t hidden, std::int64_t intermediate,
                        std::int64_t shared_intermediate, bool routing_given, c10::string_view backend, c10::string_view device) {
  if (tokens < 1) throw_invalid("explain_moe: tokens must be positive");
  const bench::MoeBenchShape shape{experts, hidden, intermediate, shared_intermediate, int(top_k), true};
  bench::check_moe_bench_shape(shape);
  moe::MoeRunnerOptions options;
  options.backend = backend == "auto" ? "" : std::string(backend);
  dispatch::apply_device_arguments(options.device, options.simulated_device, std::string(device), 0, 0);
  const moe::MoeExplanation explanation = moe::MoeRunner(std::move(options)).explain(shape.problem(tokens, routing_given));
  nlohmann::json report = cli::moe_explanation_report(explanation);
  report["text"] = explanation.to_text();
  return report.dump();
}

// {"device_bytes", "host_bytes", "by_backend": {name: bytes}}: what weight `weight_id`'s layouts hold.
std::string resident(std::int64_t weight_id) {
  const ResidentMemory held = weight_resident(weight_id);
  return nlohmann::json{{"device_bytes", held.device_bytes}, {"host_bytes", held.host_bytes}, {"by_backend", held.by_backend}}
      .dump();
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(fp4gemm, m) {
  m.def("load_linear(str directory, str prefix) -> (Tensor, Tensor, Tensor, Tensor, Tensor)", &load_linear);
  m.def("info() -> str", &info);
  m.def("resident(int weight_id) -> str", &resident);
  m.def("explain(int m, int n, int k, str activation=\"bf16\", str output=\"bf16\", str backend=\"auto\", "
        "str device=\"auto\") -> str",
        &explain);
  m.def("explain_moe(int tokens, int experts, int top_k, int hidden, int intermediate, int shared_intermediate=0, "
        "bool routing_given=False, str backend=\"auto\", str device=\"auto\") -> str",
        &explain_moe);
}

}  // namespace fp4gemm::torch_ops
