// `fp4gemm gemm`: run one NVFP4 layer of a checkpoint on an activation tensor from a file,
// y = alpha * x * W^T, with alpha = weight_scale_2 (times input_scale for --w4a4). It serves
// through the Runner, as an application would: auto (or --backend) on the GPU when there is one,
// the canary before a backend's kernel first serves, fallback on failure; it says which backend
// served and, with --explain, why.
#include <cstdio>
#include <cstring>
#include <memory>

#include "command.hpp"
#include "dispatch/device_arguments.hpp"
#include "fp4gemm/fp4gemm.hpp"
#include "fp4gemm/io/modelopt.hpp"
#include "fp4gemm/io/tensor_convert.hpp"

namespace fp4gemm::cli {
namespace {

struct GemmCommandOptions {
  std::string checkpoint;
  std::string layer;
  std::string input;
  std::string input_name;  // empty: the input file's only tensor
  std::string output;
  std::string output_name = "output";
  std::string output_dtype = "bf16";
  std::string backend = "auto";
  std::string device = "auto";
  std::string profile;
  bool w4a4 = false;
  bool explain = false;
};

io::TensorView pick_input(const io::SafetensorsFile& file, const std::string& name) {
  if (!name.empty()) return file.get(name);
  if (file.tensors().size() != 1) {
    std::string names;
    for (const io::TensorEntry& entry : file.tensors()) names += (names.empty() ? "" : ", ") + entry.name;
    throw_invalid(file.path() + " holds " + std::to_string(file.tensors().size()) + " tensors (" + names +
                  "); choose one with --input-name");
  }
  return file.view(file.tensors().front());
}

// The activation as an aligned host buffer: BF16 stays BF16, F32 stays F32.
struct Activation {
  std::vector<float> f32;
  std::vector<std::uint16_t> bf16;
  DenseView view;
};

Activation load_activation(const io::TensorView& tensor, std::int64_t k) {
  if (tensor.shape().size() != 2 || tensor.shape()[1] != k) {
    throw_invalid(*tensor.file + ": input tensor '" + tensor.name() + "' has shape " + tensor.entry->shape_string() +
                  "; the layer needs [M, " + std::to_string(k) + "]");
  }
  const std::int64_t m = tensor.shape()[0];
  Activation activation;
  if (tensor.dtype() == io::TensorDType::bf16) {
    activation.bf16.resize(std::size_t(m * k));
    if (m > 0) std::memcpy(activation.bf16.data(), tensor.data, tensor.entry->byte_size());
    activation.view = {activation.bf16.data(), DType::bf16, m, k};
  } else if (tensor.dtype() == io::TensorDType::f32) {
    activation.f32 = io::tensor_to_float(tensor);
    activation.view = {activation.f32.data(), DType::f32, m, k};
  } else {
    throw_invalid(*tensor.file + ": input tensor '" + tensor.name() + "' is " + io::to_string(tensor.dtype()) +
                  "; the activation must be BF16 or F32");
  }
  return activation;
}

io::TensorDType parse_output_dtype(const std::string& text) {
  if (text == "bf16") return io::TensorDType::bf16;
  if (text == "f32") return io::TensorDType::f32;
  throw_invalid("--output-dtype must be bf16 or f32, not '" + text + "'");
}

void run_gemm(const GemmCommandOptions& options) {
  const io::TensorDType output_dtype = parse_output_dtype(options.output_dtype);
  RunnerOptions runner_options;
  runner_options.backend = options.backend;
  runner_options.profile_path = options.profile;
  dispatch::apply_device_arguments(runner_options, options.device, 0, 0);
  Runner runner(std::move(runner_options));  // a bad --backend, --device or --profile fails here, before any file is read
  const io::Checkpoint checkpoint = io::Checkpoint::open(options.checkpoint);
  const io::Nvfp4Layer layer = io::load_nvfp4_layer(checkpoint, options.layer);
  const io::SafetensorsFile input_file = io::SafetensorsFile::open(options.input);
  const Activation activation = load_activation(pick_input(input_file, options.input_name), layer.cols);
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
  writer.add(options.output_name, output_dtype, {m, n}, out_bytes);
  writer.set_metadata("fp4gemm.layer", layer.prefix);
  writer.set_metadata("fp4gemm.backend", served);
  writer.set_metadata("fp4gemm.mode", options.w4a4 ? "w4a4" : "w4a16");
  writer.write(options.output);
  std::printf("%s: %s on %s (%s), alpha %.9g (%s); wrote '%s' [%lld, %lld] %s to %s\n", layer.prefix.c_str(),
              problem.to_string().c_str(), served.c_str(), runner.device().to_string().c_str(), alpha,
              options.w4a4 ? "weight_scale_2 x input_scale" : "weight_scale_2", options.output_name.c_str(), (long long)m,
              (long long)n, io::to_string(output_dtype), options.output.c_str());
}

const RegisterCommand registration([](CLI::App& app) {
  auto options = std::make_shared<GemmCommandOptions>();
  auto* command = app.add_subcommand("gemm", "Run one NVFP4 layer of a checkpoint on an activation tensor [M, K] from a file");
  command->add_option("--checkpoint", options->checkpoint, "Checkpoint: .safetensors file, index or directory")->required();
  command->add_option("--layer", options->layer, "Layer prefix, e.g. model.layers.0.mlp.down_proj")->required();
  command->add_option("--input", options->input, "safetensors file with the activation (BF16 or F32, [M, K])")->required();
  command->add_option("--input-name", options->input_name, "Tensor to use from --input (default: its only tensor)");
  command->add_option("--output", options->output, "safetensors file to write the result [M, N] to")->required();
  command->add_option("--output-name", options->output_name, "Name of the result tensor")->capture_default_str();
  command->add_option("--output-dtype", options->output_dtype, "bf16 or f32")->capture_default_str();
  command->add_option("--backend", options->backend, "auto, or a backend (see `fp4gemm info`)")->capture_default_str();
  command->add_option("--device", options->device, "auto (default: the first GPU, else the CPU), cpu, I or cuda:I");
  command->add_option("--profile", options->profile, "A tuned profile (JSON, from `fp4gemm tune`) to consult");
  command->add_flag("--explain", options->explain, "Print why that backend served (as `fp4gemm explain`) to stderr");
  command->add_flag("--w4a4", options->w4a4, "Quantize the activation to NVFP4 with the layer's input_scale (W4A4)");
  command->callback([options] { run_gemm(*options); });
});

}  // namespace
}  // namespace fp4gemm::cli
