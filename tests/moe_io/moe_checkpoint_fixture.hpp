#pragma once
// Small MoE layers written as checkpoints, per expert or fused, from experts quantized here, so a
// test can compare what the loader hands out with what was written.
#include <string>
#include <vector>

#include "fp4gemm/format/nvfp4_matrix.hpp"
#include "fp4gemm/io/safetensors.hpp"
#include "fp4gemm/io/tensor_convert.hpp"
#include "io/io_test_support.hpp"

namespace fp4gemm::io::moe_fixture {

struct ExpertMatrices {
  Nvfp4Matrix gate, up, down;
};

inline std::vector<std::uint8_t> f32_scalar(float value) { return float_to_bytes({value}, TensorDType::f32); }

class MoeFixture {
 public:
  MoeFixture(std::int64_t count, std::int64_t hidden_size, std::int64_t intermediate_size)
      : experts_count(count), hidden(hidden_size), intermediate(intermediate_size) {
    for (std::int64_t e = 0; e < count; ++e) {
      const auto seed = unsigned(100 + 3 * e);
      experts.push_back({quantize(intermediate, hidden, seed), quantize(intermediate, hidden, seed + 1),
                         quantize(hidden, intermediate, seed + 2)});
    }
  }

  // experts.{e}.{gate,up,down}_proj.{weight,weight_scale,weight_scale_2,input_scale}; input
  // scales gate 0.5 + e, up 0.75 + e, down 2 + e. `skip` names one tensor to leave out.
  void add_per_expert(SafetensorsWriter& writer, const std::string& prefix, const std::string& skip = "") const {
    for (std::int64_t e = 0; e < experts_count; ++e) {
      const ExpertMatrices& expert = experts[std::size_t(e)];
      const float inputs[] = {0.5f + float(e), 0.75f + float(e), 2.0f + float(e)};
      int index = 0;
      for (const auto& [name, matrix] : {std::pair{"gate_proj", &expert.gate}, {"up_proj", &expert.up}, {"down_proj", &expert.down}}) {
        const std::string module = prefix + ".experts." + std::to_string(e) + "." + name;
        add(writer, skip, module + ".weight", TensorDType::u8, {matrix->rows, matrix->cols / 2}, matrix->codes);
        add(writer, skip, module + ".weight_scale", TensorDType::f8_e4m3, {matrix->rows, matrix->cols / 16}, matrix->scales);
        add(writer, skip, module + ".weight_scale_2", TensorDType::f32, {}, f32_scalar(matrix->global_scale));
        add(writer, skip, module + ".input_scale", TensorDType::f32, {}, f32_scalar(inputs[index++]));
      }
    }
  }

  // experts.gate_up_proj [E, 2I, H/2] and experts.down_proj [E, H, I/2] with `_weight_scale`,
  // `_weight_scale_2` ([E, 2] gate's and up's when `gate_up_scale_columns` is 2, else [E], gate's)
  // and `_input_scale` ([E, 2]: 0.5 + e and 0.75 + e; down [E]: 2 + e).
  void add_fused(SafetensorsWriter& writer, const std::string& prefix, int gate_up_scale_columns, const std::string& skip = "") const {
    std::vector<std::uint8_t> gate_up_codes, gate_up_scales, down_codes, down_scales;
    std::vector<float> gate_up_global, down_global, gate_up_input, down_input;
    for (std::int64_t e = 0; e < experts_count; ++e) {
      const ExpertMatrices& expert = experts[std::size_t(e)];
      for (const Nvfp4Matrix* matrix : {&expert.gate, &expert.up}) {
        gate_up_codes.insert(gate_up_codes.end(), matrix->codes.begin(), matrix->codes.end());
        gate_up_scales.insert(gate_up_scales.end(), matrix->scales.begin(), matrix->scales.end());
      }
      down_codes.insert(down_codes.end(), expert.down.codes.begin(), expert.down.codes.end());
      down_scales.insert(down_scales.end(), expert.down.scales.begin(), expert.down.scales.end());
      gate_up_global.push_back(expert.gate.global_scale);
      if (gate_up_scale_columns == 2) gate_up_global.push_back(expert.up.global_scale);
      down_global.push_back(expert.down.global_scale);
      gate_up_input.insert(gate_up_input.end(), {0.5f + float(e), 0.75f + float(e)});
      down_input.push_back(2.0f + float(e));
    }
    const std::string base = prefix + ".experts.";
    const std::int64_t e = experts_count, h = hidden, i = intermediate;
    add(writer, skip, base + "gate_up_proj", TensorDType::u8, {e, 2 * i, h / 2}, gate_up_codes);
    add(writer, skip, base + "gate_up_proj_weight_scale", TensorDType::f8_e4m3, {e, 2 * i, h / 16}, gate_up_scales);
    std::vector<std::int64_t> global_shape{e};
    if (gate_up_scale_columns == 2) global_shape.push_back(2);
    add(writer, skip, base + "gate_up_proj_weight_scale_2", TensorDType::f32, global_shape, testing::as_f32_bytes(gate_up_global));
    add(writer, skip, base + "gate_up_proj_input_scale", TensorDType::f32, {e, 2}, testing::as_f32_bytes(gate_up_input));
    add(writer, skip, base + "down_proj", TensorDType::u8, {e, h, i / 2}, down_codes);
    add(writer, skip, base + "down_proj_weight_scale", TensorDType::f8_e4m3, {e, h, i / 16}, down_scales);
    add(writer, skip, base + "down_proj_weight_scale_2", TensorDType::f32, {e}, testing::as_f32_bytes(down_global));
    add(writer, skip, base + "down_proj_input_scale", TensorDType::f32, {e}, testing::as_f32_bytes(down_input));
  }

  void add_router(SafetensorsWriter& writer, const std::string& prefix) const {
    writer.add(prefix + ".gate.weight", TensorDType::bf16, {experts_count, hidden},
               float_to_bytes(testing::random_floats(std::size_t(experts_count * hidden), 7), TensorDType::bf16));
  }

  // An NVFP4 shared expert of intermediate 2I with its sigmoid gate.
  void add_shared_nvfp4(SafetensorsWriter& writer, const std::string& prefix) const {
    const std::int64_t inter = 2 * intermediate;
    const std::string module = prefix + ".shared_expert.";
    int seed = 300;
    for (const auto& [name, rows, cols] : {std::tuple{"gate_proj", inter, hidden}, {"up_proj", inter, hidden}, {"down_proj", hidden, inter}}) {
      const Nvfp4Matrix matrix = quantize(rows, cols, unsigned(seed++));
      writer.add(module + name + ".weight", TensorDType::u8, {rows, cols / 2}, matrix.codes);
      writer.add(module + name + ".weight_scale", TensorDType::f8_e4m3, {rows, cols / 16}, matrix.scales);
      writer.add(module + name + ".weight_scale_2", TensorDType::f32, {}, f32_scalar(matrix.global_scale));
    }
    writer.add(prefix + ".shared_expert_gate.weight", TensorDType::bf16, {1, hidden},
               float_to_bytes(testing::random_floats(std::size_t(hidden), 9), TensorDType::bf16));
  }

  void add_shared_bf16(SafetensorsWriter& writer, const std::string& prefix) const {
    const std::int64_t inter = 2 * intermediate;
    unsigned seed = 400;
    for (const auto& [name, rows, cols] : {std::tuple{"gate_proj", inter, hidden}, {"up_proj", inter, hidden}, {"down_proj", hidden, inter}}) {
      writer.add(prefix + ".shared_expert." + name + ".weight", TensorDType::bf16, {rows, cols},
                 float_to_bytes(testing::random_floats(std::size_t(rows * cols), seed++), TensorDType::bf16));
    }
  }

  std::int64_t experts_count, hidden, intermediate;
  std::vector<ExpertMatrices> experts;

 private:
  static Nvfp4Matrix quantize(std::int64_t rows, std::int64_t cols, unsigned seed) {
    const std::vector<float> values = testing::random_floats(std::size_t(rows * cols), seed);
    return quantize_weight(values.data(), rows, cols);
  }
  static void add(SafetensorsWriter& writer, const std::string& skip, const std::string& name, TensorDType dtype,
                  std::vector<std::int64_t> shape, const std::vector<std::uint8_t>& bytes) {
    if (name != skip) writer.add(name, dtype, std::move(shape), bytes);
  }
};

}  // namespace fp4gemm::io::moe_fixture
