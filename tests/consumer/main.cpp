// A program outside the fp4gemm tree: quantize a small weight and run it on the `cpu` backend.
#include <cmath>
#include <cstdio>
#include <vector>

#include <fp4gemm/fp4gemm.hpp>

int main() {
  const std::int64_t n = 8, k = 32;
  std::vector<float> weight(n * k);
  for (std::size_t i = 0; i < weight.size(); ++i) weight[i] = float(int(i % 13) - 6) * 0.25f;
  const fp4gemm::Nvfp4Matrix quantized = fp4gemm::quantize_weight(weight.data(), n, k);
  std::vector<float> activation(k, 1.0f), out(n, NAN);
  auto backend = fp4gemm::make_backend("cpu");
  const auto prepared = backend->prepare(quantized.view(), fp4gemm::probe_cpu());
  backend->run(fp4gemm::ActivationView::from_dense({activation.data(), fp4gemm::DType::f32, 1, k}), *prepared,
               quantized.global_scale, {out.data(), fp4gemm::DType::f32, 1, n}, {});
  const std::vector<float> dequantized = quantized.dequantize();
  for (std::int64_t j = 0; j < n; ++j) {
    double expected = 0;
    for (std::int64_t kk = 0; kk < k; ++kk) expected += dequantized[j * k + kk];
    if (!(std::fabs(out[j] - expected) <= 1e-4 * (1 + std::fabs(expected)))) {
      std::printf("mismatch at %lld: %f vs %f\n", (long long)j, out[j], expected);
      return 1;
    }
  }
  std::printf("consumer: ok\n");
  return 0;
}
