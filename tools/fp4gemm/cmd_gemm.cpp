// `fp4gemm gemm`: run one NVFP4 layer of a checkpoint on an activation tensor from a file,
// y = alpha * x * W^T, with alpha = weight_scale_2 (times input_scale for --w4a4). It serves
// through the Runner, as an application would: auto (or --backend) on the GPU when there is one,
// the canary before a backend's kernel first serves, fallback on failure; it says which backend
// served and, with --explain, why.
#include <cstdio>
#include <cstring>
#include <memory>

#include "activation_input.hpp"
#include "command.hpp"
#include "dispatch/device_arguments.hpp"
#include "fp4gemm/fp4gemm.hpp"
#include "fp4gemm/io/modelopt.hpp"
#include "fp4gemm/io/tensor_convert.hpp"

namespace fp4gemm::cli {
namespace {

struct GemmCommandOptions {
  LayerRunFiles files;
  std::string backend = "auto";
  std::string device = "auto";
  std::string profile;
  bool w4a4 = false;
  bool explain = false;
};

void run_gemm(const GemmCommandOptions& options) {
  const io::TensorDType output_dtype = parse_output_dtype(options.files.output_dtype);
  RunnerOptions runner_options;
  runner_options.backend = options.backend;
  runner_options.profile_path = options.profile;
  dispatch::apply_device_arguments(runner_options, options.device, 0, 0);
  Runner runner(std::move(runner_options));  // a bad --backend, --device or --profile fails here, before any file is read
  const io::Checkpoint checkpoint = io::Checkpoint::open(options.files.checkpoint);
  const io::Nvfp4Layer layer = io::load_nvfp4_layer(checkpoint, options.files.layer);
  const io::SafetensorsFile input_file = io::SafetensorsFile::open(options.files.input);
  const Activation activation = load_activation(pick_input(input_file, options.files.input_name), layer.cols);
  const std::int64_t m = activation.view.rows, n = layer.rows;

  float alpha = layer.weight_scale_2;
  ActivationView a = ActivationView::from_dense(activation.view);
  Nvfp4Matrix quantized_activation;
  if (options.w4a4) {
    if (!layer.input_scale) {
      throw_invalid(checkpoint.description() + ": layer '" + layer.prefix +
                    "' has no input_scale (no activation calibration), so it cannot run W4A4; drop --w4a4");
    }
    quantized_activation = quantize_activation(activation.view, *layer.input_scale);
    a = ActivationView::from_nvfp4(quantized_activation.view());
    alpha *= *layer.input_scale;
  }

  const DType out_type = output_dtype == io::TensorDType::f32 ? DType::f32 : DType::bf16;
  const GemmProblem problem{m, n, layer.cols, a.type, out_type};
  // Host operands: a GPU backend gets them staged to the GPU and its output staged back.
  std::vector<std::uint8_t> out_bytes(std::size_t(m * n) * dtype_size(out_type));
  const MutableDenseView out{out_bytes.data(), out_type, m, n};
  runner.gemm(a, runner.prepare(layer.view()), alpha, out);
  // After the call the explanation's choice is the backend that served: one that failed or was
  // quarantined on the way is passed over with its reason.
  const dispatch::Explanation explanation = runner.explain(problem);
  const std::string served = m == 0 ? "none (M = 0)" : explanation.choice;
  if (options.explain) std::fprintf(stderr, "%s", explanation.to_text().c_str());

  io::SafetensorsWriter writer;
  writer.add(options.files.output_name, output_dtype, {m, n}, out_bytes);
  writer.set_metadata("fp4gemm.layer", layer.prefix);
  writer.set_metadata("fp4gemm.backend", served);
  writer.set_metadata("fp4gemm.mode", options.w4a4 ? "w4a4" : "w4a16");
  writer.write(options.files.output);
  std::printf("%s: %s on %s (%s), alpha %.9g (%s); wrote '%s' [%lld, %lld] %s to %s\n", layer.prefix.c_str(),
              problem.to_string().c_str(), served.c_str(), runner.device().to_string().c_str(), alpha,
              options.w4a4 ? "weight_scale_2 x input_scale" : "weight_scale_2", options.files.output_name.c_str(), (long long)m,
              (long long)n, io::to_string(output_dtype), options.files.output.c_str());
}

const RegisterCommand registration([](CLI::App& app) {
  auto options = std::make_shared<GemmCommandOptions>();
  auto* command = app.add_subcommand("gemm", "Run one NVFP4 layer of a checkpoint on an activation tensor [M, K] from a file");
  add_layer_run_options(command, options->files, "model.layers.0.mlp.down_proj", "[M, K]", "[M, N]");
  command->add_option("--backend", options->backend, "auto, or a backend (see `fp4gemm info`)")->capture_default_str();
  command->add_option("--device", options->device, "auto (default: the first GPU, else the CPU), cpu, I or cuda:I");
  command->add_option("--profile", options->profile, "A tuned profile (JSON, from `fp4gemm tune`) to consult");
  command->add_flag("--explain", options->explain, "Print why that backend served (as `fp4gemm explain`) to stderr");
  command->add_flag("--w4a4", options->w4a4, "Quantize the activation to NVFP4 with the layer's input_scale (W4A4)");
  command->callback([options] { run_gemm(*options); });
});

}  // namespace
}  // namespace fp4gemm::cli
