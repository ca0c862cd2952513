// Every host backend against the `ref` oracle on fresh random inputs across the shape grid,
// with outputs poisoned before each call and every element checked.
#include <gtest/gtest.h>

#include <cstdlib>

#include "backends/cpu/cpu_kernels.hpp"
#include "backends/ref/ref_backend.hpp"
#include "fp4gemm/error.hpp"
#include "fp4gemm/format/e2m1.hpp"
#include "fp4gemm/format/scale_layout.hpp"
#include "fp4gemm/registry.hpp"
#include "support/test_support.hpp"

namespace fp4gemm::testing {
namespace {

constexpr double kRelativeTolerance = 1e-5;

std::vector<std::string> host_backends() {
  std::vector<std::string> names;
  for (const auto& backend : make_all_backends())
    if (backend->memory() == Memory::host) names.push_back(backend->name());
  return names;
}

void expect_matches_reference(Backend& backend, const GemmCase& c) {
  const std::uint64_t seed = fresh_seed();
  std::mt19937_64 rng(seed);
  const GemmOperands operands = make_operands(c, rng);
  const auto prepared = backend.prepare(operands.weight.view(), probe_cpu());
  PoisonedOutput out = make_poisoned_output(c.m, c.n, c.output);
  backend.run(operands.activation(), *prepared, operands.alpha, out.view, {});
  const std::string failures = compare_with_reference(operands, read_output(out), c.m, c.n, c.output, kRelativeTolerance);
  EXPECT_TRUE(failures.empty()) << backend.name() << " " << c.to_string() << " seed " << seed << "\n" << failures;
}

class HostBackend : public ::testing::TestWithParam<std::string> {};

TEST_P(HostBackend, MatchesReferenceAcrossTheShapeGrid) {
  auto backend = make_backend(GetParam());
  const ActivationType activations[] = {ActivationType::f32, ActivationType::bf16, ActivationType::nvfp4};
  const DType outputs[] = {DType::f32, DType::bf16, DType::f16};
  int index = 0;
  for (std::int64_t m : {1, 2, 3, 16, 17, 128, 300})
    for (std::int64_t n : {1, 7, 64, 129, 512})
      for (std::int64_t k : {16, 32, 48, 4096}) {
        // FP32 output for every shape (the tight 1e-5 check), and the type combinations rotated.
        expect_matches_reference(*backend, {m, n, k, activations[index % 3], DType::f32});
        expect_matches_reference(*backend, {m, n, k, activations[(index + 1) % 3], outputs[index % 3]});
        ++index;
      }
}

TEST_P(HostBackend, EveryActivationAndOutputType) {
  auto backend = make_backend(GetParam());
  for (ActivationType activation : {ActivationType::f32, ActivationType::bf16, ActivationType::nvfp4})
    for (DType output : {DType::f32, DType::bf16, DType::f16})
      for (std::int64_t m : {1, 5, 40}) expect_matches_reference(*backend, {m, 33, 80, activation, output});
}

TEST_P(HostBackend, RejectsBadInputAndWritesNothing) {
  auto backend = make_backend(GetParam());
  std::mt19937_64 rng(fresh_seed());
  const GemmOperands operands = make_operands({4, 8, 32, ActivationType::f32, DType::f32}, rng);
  const auto prepared = backend->prepare(operands.weight.view(), probe_cpu());
  const auto expect_rejected = [&](const ActivationView& a, const MutableDenseView& out_view, const char* what) {
    PoisonedOutput out = make_poisoned_output(8, 8, DType::f32);
    MutableDenseView target = out_view;
    target.data = out.view.data;
    EXPECT_THROW(backend->run(a, *prepared, 1.0f, target, {}), Error) << what;
    for (float value : read_output(out)) ASSERT_TRUE(std::isnan(value)) << what << ": output was written";
  };
  const MutableDenseView good_out{nullptr, DType::f32, 4, 8};
  const DenseView good_a{operands.activation_f32.data(), DType::f32, 4, 32};
  DenseView wrong_k = good_a;
  wrong_k.cols = 16;
  expect_rejected(ActivationView::from_dense(wrong_k), good_out, "activation K differs from weight K");
  expect_rejected(ActivationView::from_dense(good_a), {nullptr, DType::f32, 4, 9}, "output N differs");
  expect_rejected(ActivationView::from_dense(good_a), {nullptr, DType::f32, 5, 8}, "output M differs");
  DenseView negative = good_a;
  negative.rows = -1;
  expect_rejected(ActivationView::from_dense(negative), {nullptr, DType::f32, -1, 8}, "negative M");
  DenseView null_a = good_a;
  null_a.data = nullptr;
  expect_rejected(ActivationView::from_dense(null_a), good_out, "null activation");
  DenseView short_stride = good_a;
  short_stride.row_stride = 16;
  expect_rejected(ActivationView::from_dense(short_stride), good_out, "row stride < cols");
  DenseView device_a = good_a;
  device_a.memory = Memory::cuda;
  expect_rejected(ActivationView::from_dense(device_a), good_out, "device memory on a host backend");
  DenseView short_buffer = good_a;
  short_buffer.size_bytes = 4 * 32 * 4 - 4;  // one float short of [4, 32]
  expect_rejected(ActivationView::from_dense(short_buffer), good_out, "activation buffer one element short");
  MutableDenseView short_out = good_out;
  short_out.size_bytes = 4 * 8 * 4 - 1;
  expect_rejected(ActivationView::from_dense(good_a), short_out, "output buffer one byte short");
  Nvfp4Matrix short_codes = quantize_activation(good_a, 1.0f);
  Nvfp4View short_codes_view = short_codes.view();
  short_codes_view.codes_size_bytes -= 1;
  expect_rejected(ActivationView::from_nvfp4(short_codes_view), good_out, "NVFP4 activation codes one byte short");
  Nvfp4Matrix nan_activation = quantize_activation(good_a, 1.0f);
  nan_activation.scales[0] = 0x7F;
  expect_rejected(ActivationView::from_nvfp4(nan_activation.view()), good_out, "NaN activation scale");

  // A weight with K % 16 != 0 or NaN scales is refused at preparation.
  Nvfp4View bad_weight = operands.weight.view();
  bad_weight.cols = 40;
  EXPECT_THROW(backend->prepare(bad_weight, probe_cpu()), Error);
  Nvfp4Matrix nan_weight = operands.weight;
  nan_weight.scales[3] = 0xFF;
  EXPECT_THROW(backend->prepare(nan_weight.view(), probe_cpu()), Error);
  Nvfp4View short_scales = operands.weight.view();
  short_scales.scales_size_bytes -= 1;
  EXPECT_THROW(backend->prepare(short_scales, probe_cpu()), Error) << "weight scales one byte short";
}

TEST_P(HostBackend, ZeroRowsIsANoOp) {
  auto backend = make_backend(GetParam());
  std::mt19937_64 rng(fresh_seed());
  const GemmOperands operands = make_operands({0, 8, 32, ActivationType::f32, DType::f32}, rng);
  const auto prepared = backend->prepare(operands.weight.view(), probe_cpu());
  PoisonedOutput out = make_poisoned_output(0, 8, DType::f32);
  EXPECT_NO_THROW(backend->run(operands.activation(), *prepared, 1.0f, out.view, {}));
  for (std::uint8_t byte : out.bytes) ASSERT_EQ(byte, 0xFF);
}

TEST_P(HostBackend, AcceptsSwizzledScalesAndStridedOutput) {
  auto backend = make_backend(GetParam());
  const std::uint64_t seed = fresh_seed();
  std::mt19937_64 rng(seed);
  const GemmCase c{3, 130, 96, ActivationType::f32, DType::f32};
  const GemmOperands operands = make_operands(c, rng);
  Nvfp4Matrix swizzled = operands.weight;
  swizzled.scales = scale_layout::to_swizzled(operands.weight.scales.data(), c.n, c.k);
  swizzled.scale_layout = ScaleLayout::swizzled_128x4;
  const auto prepared = backend->prepare(swizzled.view(), probe_cpu());
  std::vector<float> strided(static_cast<std::size_t>(c.m * 200), -1.0f);
  backend->run(operands.activation(), *prepared, operands.alpha, {strided.data(), DType::f32, c.m, c.n, 200}, {});
  std::vector<float> packed;
  for (std::int64_t i = 0; i < c.m; ++i) {
    for (std::int64_t j = 0; j < c.n; ++j) packed.push_back(strided[std::size_t(i * 200 + j)]);
    for (std::int64_t j = c.n; j < 200; ++j) ASSERT_EQ(strided[std::size_t(i * 200 + j)], -1.0f) << "wrote past N";
  }
  EXPECT_EQ(compare_with_reference(operands, packed, c.m, c.n, c.output, kRelativeTolerance), "") << "seed " << seed;
}

TEST(Registry, UnknownBackendNamesTheValidOnes) {
  try {
    make_backend("does-not-exist");
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("ref"), std::string::npos);
    EXPECT_NE(std::string(error.what()).find("cpu"), std::string::npos);
  }
}

TEST(Registry, WeightFromAnotherBackendIsAClearError) {
  auto ref = make_backend("ref");
  auto cpu = make_backend("cpu");
  std::mt19937_64 rng(fresh_seed());
  const GemmOperands operands = make_operands({1, 8, 32, ActivationType::f32, DType::f32}, rng);
  const auto prepared = ref->prepare(operands.weight.view(), probe_cpu());
  PoisonedOutput out = make_poisoned_output(1, 8, DType::f32);
  EXPECT_THROW(cpu->run(operands.activation(), *prepared, 1.0f, out.view, {}), Error);
}

// The `cpu` backend has two kernels for BF16-exact activations (the AVX512-BF16 one where the CPU
// has it, the Highway FP32 one elsewhere). The grid above takes whichever this CPU picks; this
// runs the Highway kernel on the same kinds of problems with the BF16 kernel switched off, and
// the BF16 kernel past the FP32 kernels' M range (it serves up to 2048 rows).
TEST(CpuKernelPaths, HighwayKernelServesBf16ActivationsWhenTheBf16KernelIsOff) {
  auto cpu = make_backend("cpu");
  setenv("FP4GEMM_CPU_NO_BF16", "1", 1);
  for (std::int64_t m : {1, 3, 17, 300})
    for (std::int64_t n : {7, 129})
      for (std::int64_t k : {16, 48, 4096}) {
        expect_matches_reference(*cpu, {m, n, k, ActivationType::bf16, DType::f32});
        expect_matches_reference(*cpu, {m, n, k, ActivationType::nvfp4, DType::f32});
      }
  unsetenv("FP4GEMM_CPU_NO_BF16");
}

TEST(CpuKernelPaths, LargeMWithBf16ActivationsMatchesTheReference) {
  auto cpu = make_backend("cpu");
  for (std::int64_t m : {257, 700}) {
    expect_matches_reference(*cpu, {m, 37, 80, ActivationType::bf16, DType::f32});
    expect_matches_reference(*cpu, {m, 37, 80, ActivationType::nvfp4, DType::bf16});
    expect_matches_reference(*cpu, {m, 37, 80, ActivationType::f32, DType::f32});  // SGEMM panels
  }
}

// The Highway kernel hands over to decoded panels times SGEMM above a crossover that depends on the
// SIMD target (cpu_tuning.hpp): both sides of it on this CPU (FP32 activations, which no BF16
// kernel takes).
TEST(CpuKernelPaths, BothSidesOfTheFusedCrossoverMatchTheReference) {
  auto cpu = make_backend("cpu");
  const std::int64_t crossover = cpu_kernels::fused_max_m();
  ASSERT_GE(crossover, 1);
  for (std::int64_t m : {crossover, crossover + 1}) {
    expect_matches_reference(*cpu, {m, 37, 80, ActivationType::f32, DType::f32});
    expect_matches_reference(*cpu, {m, 129, 4096, ActivationType::f32, DType::bf16});
  }
}

INSTANTIATE_TEST_SUITE_P(All, HostBackend, ::testing::ValuesIn(host_backends()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace fp4gemm::testing

namespace fp4gemm::testing {
namespace {

// The oracle itself, on a product small enough to check by hand.
TEST(RefBackend, ComputesAHandCheckedProduct) {
  Nvfp4Matrix weight;
  weight.rows = 2;
  weight.cols = 16;
  weight.codes.assign(16, 0);
  for (int i = 0; i < 8; ++i) weight.codes[i] = e2m1::pack(2, 2);       // row 0: 1.0 everywhere
  for (int i = 8; i < 16; ++i) weight.codes[i] = e2m1::pack(7, 15);     // row 1: +6, -6 alternating
  weight.scales = {0x38, 0x40};                                          // 1.0 and 2.0
  std::vector<float> activation(16);
  for (int i = 0; i < 16; ++i) activation[i] = float(i + 1);             // 1..16
  auto ref = make_backend("ref");
  const auto prepared = ref->prepare(weight.view(), probe_cpu());
  std::vector<float> out(2, NAN);
  ref->run(ActivationView::from_dense({activation.data(), DType::f32, 1, 16}), *prepared, 2.0f,
           {out.data(), DType::f32, 1, 2}, {});
  EXPECT_EQ(out[0], 2.0f * 136.0f);
  EXPECT_EQ(out[1], 2.0f * 12.0f * -8.0f);  // sum of (odd - even) = -8, times 6 * 2
}

}  // namespace
}  // namespace fp4gemm::testing
