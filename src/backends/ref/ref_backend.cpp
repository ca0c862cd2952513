#include "backends/ref/ref_backend.hpp"

#include <cmath>

#include "core/host_rows.hpp"
#include "fp4gemm/format/nvfp4_matrix.hpp"
#include "fp4gemm/format/scale_layout.hpp"

namespace fp4gemm {
namespace {

// The checkpoint layout, copied: codes [N, K/2] and linear scales [N, K/16].
struct RefWeight final : PreparedWeight {
  std::vector<std::uint8_t> codes;
  std::vector<std::uint8_t> scales;
  Nvfp4View view() const { return {codes.data(), scales.data(), ScaleLayout::linear, 1.0f, rows, cols, Memory::host, 0}; }
};

}  // namespace

CheckResult RefBackend::check_device(const DeviceInfo& device) const {
  if (device.is_cuda()) return CheckResult::fail("runs on the CPU only");
  return CheckResult::pass();
}

CheckResult RefBackend::check_problem(const GemmProblem& problem, const DeviceInfo&) const {
  if (problem.k % 16 != 0) return CheckResult::fail("K must be a multiple of 16");
  return CheckResult::pass();
}

WeightResidency RefBackend::residency(std::int64_t rows, std::int64_t cols) const {
  const std::int64_t bytes = rows * (cols / 2) + rows * scale_layout::scale_cols(cols);
  return {bytes, Memory::host, false, "the checkpoint NVFP4 codes and linear E4M3 scales, copied (0.5625 B/element)"};
}

std::int64_t RefBackend::workspace_bytes(const GemmProblem& problem, const DeviceInfo&) const {
  // The weight decoded to FP32, one activation row, and the FP64 sums and error scales (reference_gemm).
  return problem.n * problem.k * 4 + problem.k * 4 + 2 * problem.m * problem.n * 8;
}

std::unique_ptr<PreparedWeight> RefBackend::prepare(const Nvfp4View& weight, const DeviceInfo&) {
  validate_weight(weight);
  if (weight.memory != Memory::host) throw_invalid("ref: the weight must be in host memory");
  auto prepared = std::make_unique<RefWeight>();
  prepared->rows = weight.rows;
  prepared->cols = weight.cols;
  prepared->backend = name();
  prepared->codes.assign(weight.codes, weight.codes + weight.code_bytes());
  if (weight.scale_layout == ScaleLayout::linear) {
    prepared->scales.assign(weight.scales, weight.scales + weight.scale_bytes());
  } else {
    prepared->scales = scale_layout::to_linear(weight.scales, weight.rows, weight.cols);
  }
  prepared->resident_bytes = std::int64_t(prepared->codes.size() + prepared->scales.size());
  return prepared;
}

ReferenceResult reference_gemm(const ActivationView& a, const Nvfp4View& weight, float alpha) {
  const std::int64_t m = a.rows(), n = weight.rows, k = weight.cols;
  ReferenceResult result;
  result.values.assign(static_cast<std::size_t>(m * n), 0.0);
  result.absolute_sum.assign(static_cast<std::size_t>(m * n), 0.0);
  std::vector<float> weight_rows(static_cast<std::size_t>(n * k));
  for (std::int64_t row = 0; row < n; ++row) dequantize_row(weight, row, weight_rows.data() + row * k, false);
  std::vector<float> activation_row(static_cast<std::size_t>(k));
  for (std::int64_t i = 0; i < m; ++i) {
    load_activation_row(a, i, activation_row.data());
    for (std::int64_t j = 0; j < n; ++j) {
      double sum = 0.0, absolute = 0.0;
      const float* w = weight_rows.data() + j * k;
      for (std::int64_t kk = 0; kk < k; ++kk) {
        const double product = double(activation_row[kk]) * double(w[kk]);
        sum += product;
        absolute += std::fabs(product);
      }
      result.values[std::size_t(i * n + j)] = double(alpha) * sum;
      result.absolute_sum[std::size_t(i * n + j)] = std::fabs(double(alpha)) * absolute;
    }
  }
  return result;
}

void RefBackend::run(const ActivationView& a, const PreparedWeight& weight, float alpha, const MutableDenseView& out,
                     const RunContext&) {
  validate_gemm(a, weight, out, Memory::host);
  const auto& prepared = prepared_as<RefWeight>(weight, name());
  const ReferenceResult result = reference_gemm(a, prepared.view(), alpha);
  for (std::int64_t i = 0; i < out.rows; ++i)
    for (std::int64_t j = 0; j < out.cols; ++j) store_output(out, i, j, float(result.values[std::size_t(i * out.cols + j)]));
}

}  // namespace fp4gemm
