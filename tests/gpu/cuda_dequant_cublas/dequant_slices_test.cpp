// cuda_dequant_cublas with a workspace of one 128-row slice: the weight is dequantized and multiplied
// in several slices, the last one partial, for every activation and output type, a device weight
// with swizzled scales, and a CUDA graph capture. Outputs poisoned, every element against `ref`.
#include <gtest/gtest.h>

#include "backends/cuda_dequant_cublas/dequant_cublas_backend.hpp"
#include "fp4gemm/error.hpp"
#include "fp4gemm/format/scale_layout.hpp"
#include "gpu/gpu_test_support.hpp"

namespace fp4gemm::testing {
namespace {

constexpr double kRelativeTolerance = 1e-4;  // as tests/gpu/cuda_backend_correctness_test.cpp
constexpr std::int64_t kK = 96;
constexpr std::int64_t kSliceRows = kDequantSliceRowMultiple;
constexpr std::int64_t kN = 2 * kSliceRows + 44;  // two whole slices and a partial one

class CudaDequantSlices : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto found = first_gpu();
    if (!found) GTEST_SKIP() << "no GPU: " << cuda_unavailable_reason();
    gpu_ = *found;
    if (!backend_.check_device(gpu_)) GTEST_SKIP() << backend_.check_device(gpu_).reason;
    stream_ = std::make_unique<TestStream>();
  }

  // One case: prepared from `weight` (host or device view), run on the test stream (or captured into
  // a graph and replayed when `graph`), compared with ref.
  void expect_matches(const GemmOperands& operands, const Nvfp4View& weight, const GemmCase& c, bool graph = false) {
    const auto prepared = backend_.prepare(weight, gpu_);
    const DeviceActivation activation = upload_activation(operands, gpu_.index);
    DeviceOutput out(c.m, c.n, c.output, gpu_.index);
    if (graph) {
      cudaGraph_t captured = nullptr;
      cudaGraphExec_t executable = nullptr;
      ASSERT_EQ(cudaStreamBeginCapture(stream_->get(), cudaStreamCaptureModeThreadLocal), cudaSuccess);
      backend_.run(activation.view, *prepared, operands.alpha, out.view(), {stream_->get()});
      ASSERT_EQ(cudaStreamEndCapture(stream_->get(), &captured), cudaSuccess);
      ASSERT_EQ(cudaGraphInstantiate(&executable, captured, 0), cudaSuccess);
      ASSERT_EQ(cudaGraphLaunch(executable, stream_->get()), cudaSuccess);
      stream_->synchronize();
      cudaGraphExecDestroy(executable);
      cudaGraphDestroy(captured);
    } else {
      backend_.run(activation.view, *prepared, operands.alpha, out.view(), {stream_->get()});
      stream_->synchronize();
    }
    out.download();
    EXPECT_EQ(compare_with_reference(operands, out.values(), c.m, c.n, c.output, kRelativeTolerance), "") << c.to_string();
    EXPECT_TRUE(out.only_elements_written()) << c.to_string();
  }

  DeviceInfo gpu_;
  CudaDequantCublasBackend backend_{Bf16Weight::per_call, kSliceRows * kK * 2};
  std::unique_ptr<TestStream> stream_;
};

TEST_F(CudaDequantSlices, PlansThreeSlices) {
  const std::string plan = backend_.kernel_plan({8, kN, kK, ActivationType::bf16, DType::f32}, gpu_);
  EXPECT_NE(plan.find("3 slices of 128 rows"), std::string::npos) << plan;
  EXPECT_EQ(backend_.workspace_bytes({8, kN, kK, ActivationType::bf16, DType::bf16}, gpu_), kSliceRows * kK * 2);
}

TEST_F(CudaDequantSlices, EveryTypeMatchesTheReference) {
  std::mt19937_64 rng(fresh_seed());
  for (ActivationType activation : {ActivationType::bf16, ActivationType::f32, ActivationType::nvfp4})
    for (DType output : {DType::f32, DType::bf16, DType::f16})
      for (std::int64_t m : {1, 37}) {
        const GemmCase c{m, kN, kK, activation, output};
        const GemmOperands operands = make_operands(c, rng);
        expect_matches(operands, operands.weight.view(), c);
      }
}

TEST_F(CudaDequantSlices, DeviceWeightWithSwizzledScales) {
  std::mt19937_64 rng(fresh_seed());
  const GemmCase c{5, kN, kK, ActivationType::bf16, DType::f32};
  const GemmOperands operands = make_operands(c, rng);
  Nvfp4Matrix swizzled = operands.weight;
  swizzled.scales = scale_layout::to_swizzled(operands.weight.scales.data(), c.n, c.k);
  swizzled.scale_layout = ScaleLayout::swizzled_128x4;
  const DeviceNvfp4 weight = upload_nvfp4(swizzled, gpu_.index);
  expect_matches(operands, weight.view, c);
  // The scales are kept linear: the bytes are the linear layout's, as residency() says.
  EXPECT_EQ(backend_.prepare(weight.view, gpu_)->resident_bytes, backend_.residency(c.n, c.k).bytes);
}

TEST_F(CudaDequantSlices, CapturedIntoACudaGraph) {
  std::mt19937_64 rng(fresh_seed());
  const GemmCase c{16, kN, kK, ActivationType::bf16, DType::bf16};
  const GemmOperands operands = make_operands(c, rng);
  expect_matches(operands, operands.weight.view(), c, /*graph=*/true);
}

TEST_F(CudaDequantSlices, PersistentCopyKeepsTwoBytesAnElement) {
  CudaDequantCublasBackend copy(Bf16Weight::persistent_copy);
  EXPECT_EQ(copy.name(), "cuda_bf16_copy");
  std::mt19937_64 rng(fresh_seed());
  const GemmCase c{3, kN, kK, ActivationType::bf16, DType::f32};
  const GemmOperands operands = make_operands(c, rng);
  const auto prepared = copy.prepare(operands.weight.view(), gpu_);
  EXPECT_EQ(prepared->resident_bytes, kN * kK * 2);
  EXPECT_TRUE(copy.residency(kN, kK).dense_copy);
  // The per-call variant refuses the copy's layout (same C++ type, no NVFP4 to slice), writing nothing.
  const DeviceActivation activation = upload_activation(operands, gpu_.index);
  DeviceOutput out(c.m, c.n, c.output, gpu_.index);
  EXPECT_THROW(backend_.run(activation.view, *prepared, 1.0f, out.view(), {stream_->get()}), Error);
  stream_->synchronize();
  out.download();
  EXPECT_TRUE(out.untouched());
}

}  // namespace
}  // namespace fp4gemm::testing
