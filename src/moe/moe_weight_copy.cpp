#include "moe/moe_weight_copy.hpp"

#include "core/host_rows.hpp"
#include "fp4gemm/error.hpp"
#include "fp4gemm/format/scale_layout.hpp"

namespace fp4gemm::moe {
namespace {

class Copier {
 public:
  Copier(MoeWeightCopy& copy, const std::string& backend) : copy_(copy), backend_(backend) {}

  Nvfp4View nvfp4(const Nvfp4View& view) {
    require_host(view.memory);
    Nvfp4Matrix matrix;
    matrix.rows = view.rows;
    matrix.cols = view.cols;
    matrix.global_scale = view.global_scale;
    matrix.codes.assign(view.codes, view.codes + view.code_bytes());
    matrix.scales = linear_scales(view);
    copy_.matrices.push_back(std::move(matrix));
    return copy_.matrices.back().view();
  }

  DenseView dense(const DenseView& view) {
    if (view.data == nullptr) return view;
    copy_.dense.push_back(dense_as_f32(view, backend_));
    return {copy_.dense.back().data(), DType::f32, view.rows, view.cols, 0, Memory::host, 0};
  }

  ExpertProjections projections(const ExpertProjections& source) {
    ExpertProjections copied = source;
    copied.gate = nvfp4(source.gate);
    copied.up = nvfp4(source.up);
    copied.down = nvfp4(source.down);
    return copied;
  }

 private:
  void require_host(Memory memory) const {
    if (memory != Memory::host) throw_invalid(backend_ + ": the MoE weights must be in host memory");
  }
  MoeWeightCopy& copy_;
  const std::string& backend_;
};

}  // namespace

std::vector<std::uint8_t> linear_scales(const Nvfp4View& view) {
  return view.scale_layout == ScaleLayout::linear ? std::vector<std::uint8_t>(view.scales, view.scales + view.scale_bytes())
                                                  : scale_layout::to_linear(view.scales, view.rows, view.cols);
}

std::vector<float> dense_as_f32(const DenseView& view, const std::string& backend) {
  if (view.memory != Memory::host) throw_invalid(backend + ": the MoE router and dense weights must be in host memory");
  std::vector<float> values(static_cast<std::size_t>(view.rows * view.cols));
  for (std::int64_t r = 0; r < view.rows; ++r) load_activation_row(ActivationView::from_dense(view), r, values.data() + r * view.cols);
  return values;
}

std::int64_t MoeWeightCopy::bytes() const {
  std::int64_t total = 0;
  for (const auto& matrix : matrices) total += std::int64_t(matrix.codes.size() + matrix.scales.size());
  for (const auto& values : dense) total += std::int64_t(values.size() * sizeof(float));
  return total;
}

MoeWeightCopy copy_moe_weights(const MoeWeights& weights, const std::string& backend) {
  MoeWeightCopy copy;
  // NOTE: views point into these vectors' elements; reserving keeps push_back from moving them.
  copy.matrices.reserve(3 * weights.experts.size() + 3);
  copy.dense.reserve(5);
  Copier copier(copy, backend);
  copy.weights.layout = weights.layout;
  for (const auto& expert : weights.experts) copy.weights.experts.push_back(copier.projections(expert));
  copy.weights.router = copier.dense(weights.router);
  if (weights.shared) {
    SharedExpert shared;
    if (weights.shared->nvfp4) shared.nvfp4 = copier.projections(*weights.shared->nvfp4);
    shared.dense_gate = copier.dense(weights.shared->dense_gate);
    shared.dense_up = copier.dense(weights.shared->dense_up);
    shared.dense_down = copier.dense(weights.shared->dense_down);
    shared.gate = copier.dense(weights.shared->gate);
    copy.weights.shared = shared;
  }
  return copy;
}

}  // namespace fp4gemm::moe
