// A program outside the fp4gemm tree that uses the installed library as an application would:
// quantize a weight to NVFP4, run y = x · Wᵀ through the Runner, and check y against the
// dequantized weight. The lines between the README-EXAMPLE markers are README.md's library example
// (run_consumer_test.sh fails when the two differ), so the example is compiled and run here.
#include <cmath>
#include <cstdio>
#include <vector>

#include <fp4gemm/fp4gemm.hpp>
#include <fp4gemm/runner.hpp>

int main() {
  const std::int64_t m = 2, n = 48, k = 128;
  std::vector<float> weight(n * k), x(m * k), y(m * n, NAN);  // y poisoned: an unwritten element fails
  for (std::size_t i = 0; i < weight.size(); ++i) weight[i] = float(int(i * 7 % 13) - 6) * 0.37f;
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = float(int(i * 5 % 11) - 5) * 0.5f;

  // README-EXAMPLE-BEGIN
  // weight: n x k floats, row-major; x: m x k activations; y: m x n outputs.
  fp4gemm::Nvfp4Matrix w = fp4gemm::quantize_weight(weight.data(), n, k);  // NVIDIA ModelOpt's recipe
  fp4gemm::Runner runner;                       // the first GPU, else the CPU; backend "auto"
  fp4gemm::WeightHandle handle = runner.prepare(w.view());
  runner.gemm(fp4gemm::ActivationView::from_dense({x.data(), fp4gemm::DType::f32, m, k}), handle,
              w.global_scale, {y.data(), fp4gemm::DType::f32, m, n});  // alpha: W's global scale
  std::printf("served by %s\n",
              runner.explain({m, n, k, fp4gemm::ActivationType::f32, fp4gemm::DType::f32}).choice.c_str());
  // README-EXAMPLE-END

  const std::vector<float> dequantized = w.dequantize();  // global scale applied
  for (std::int64_t row = 0; row < m; ++row) {
    for (std::int64_t col = 0; col < n; ++col) {
      double expected = 0, magnitude = 0;
      for (std::int64_t i = 0; i < k; ++i) {
        const double term = double(x[row * k + i]) * dequantized[col * k + i];
        expected += term;
        magnitude += std::fabs(term);
      }
      const float got = y[row * n + col];
      if (!(std::fabs(got - expected) <= 1e-5 * magnitude + 1e-6)) {  // NaN fails too
        std::printf("y[%lld, %lld] is %f, expected %f\n", (long long)row, (long long)col, got, expected);
        return 1;
      }
    }
  }
  std::printf("consumer: ok\n");
  return 0;
}
