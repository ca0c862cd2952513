#include "fp4gemm/io/checkpoint_summary.hpp"

#include <set>
#include <tuple>

#include "fp4gemm/io/tensor_convert.hpp"

namespace fp4gemm::io {

CheckpointSummary summarize_checkpoint(const Checkpoint& checkpoint, const QuantConfig& config) {
  CheckpointSummary summary;
  summary.config = config;
  summary.files = std::int64_t(checkpoint.files().size());
  for (TensorClass tensor_class : kAllTensorClasses) summary.classes[tensor_class] = {};

  // Tensors of NVFP4 layers are classed by their layer; the layer's shape joins the GEMM shapes.
  std::map<std::string, TensorClass> layer_class;
  std::map<std::pair<std::int64_t, std::int64_t>, GemmShape> shapes;
  const auto add_shape = [&](std::int64_t n, std::int64_t k, std::int64_t count, TensorClass tensor_class) {
    GemmShape& shape = shapes[{n, k}];
    shape.n = n;
    shape.k = k;
    shape.count += count;
    shape.classes.insert(to_string(tensor_class));
  };
  // Fused 3-D experts: each expert's gate_up and down is a GEMM of its own.
  std::set<std::string> fused_modules;
  for (const std::string& prefix : find_moe_layers(checkpoint)) {
    const MoeLayerShape layer = describe_moe_layer(checkpoint, prefix);
    summary.moe_layers.push_back(layer);
    if (layer.layout != moe::ExpertLayout::fused_gate_up) continue;
    for (const auto& [projection, n, k] : {std::tuple{"gate_up_proj", 2 * layer.intermediate, layer.hidden},
                                           std::tuple{"down_proj", layer.hidden, layer.intermediate}}) {
      const std::string module = prefix + ".experts." + projection;
      fused_modules.insert(module);
      const TensorClass tensor_class = classify_tensor(module + ".weight", config, false);
      summary.classes[tensor_class].nvfp4_layers += layer.experts;
      summary.nvfp4_layers += layer.experts;
      summary.modelopt_layers += layer.experts;
      if (checkpoint.find(module + "_input_scale") || checkpoint.find(module + ".input_scale")) summary.layers_with_input_scale += layer.experts;
      add_shape(n, k, layer.experts, tensor_class);
    }
  }
  summary.moe_routing = read_moe_routing_config(checkpoint.directory());
  for (const std::string& prefix : find_nvfp4_layers(checkpoint)) {
    if (fused_modules.count(prefix) != 0) continue;  // the dotted form experts.gate_up_proj.weight_scale_2, counted above
    const Nvfp4Layer layer = load_nvfp4_layer(checkpoint, prefix, /*check_block_scales=*/false);
    const TensorClass tensor_class = classify_tensor(prefix + ".weight", config, false);
    layer_class[prefix] = tensor_class;
    summary.classes[tensor_class].nvfp4_layers += 1;
    summary.nvfp4_layers += 1;
    (layer.convention == Nvfp4Convention::modelopt ? summary.modelopt_layers : summary.compressed_tensors_layers) += 1;
    if (layer.input_scale) summary.layers_with_input_scale += 1;
    add_shape(layer.rows, layer.cols, 1, tensor_class);
  }
  const bool quantized = summary.nvfp4_layers > 0 || config.found;

  for (const std::string& name : checkpoint.tensor_names()) {
    const TensorView tensor = checkpoint.get(name);
    const auto layer = layer_class.find(module_of(name));
    TensorClass tensor_class;
    if (layer != layer_class.end()) {
      tensor_class = layer->second;
    } else {
      // A 2-D floating-point *.weight in a quantized checkpoint is a linear layer left in high precision.
      const bool high_precision_linear = quantized && tensor.shape().size() == 2 && is_floating_point(tensor.dtype()) &&
                                         name.size() > 7 && name.compare(name.size() - 7, 7, ".weight") == 0;
      tensor_class = classify_tensor(name, config, high_precision_linear);
    }
    ClassTotals& totals = summary.classes[tensor_class];
    totals.tensors += 1;
    totals.bytes += std::int64_t(tensor.entry->byte_size());
    summary.tensors += 1;
    summary.bytes += std::int64_t(tensor.entry->byte_size());
  }
  for (auto& [key, shape] : shapes) summary.shapes.push_back(shape);
  return summary;
}

}  // namespace fp4gemm::io
