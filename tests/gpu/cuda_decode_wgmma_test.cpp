// `cuda_decode`'s wgmma kernel (SM 9.0) at every compiled CTA shape and several K splits, forced
// through FP4GEMM_DECODE_KERNEL / FP4GEMM_WGMMA_SHAPE and checked against the CPU `ref` oracle on
// fresh random inputs: partial row blocks (N not a multiple of the CTA's rows, and N below one
// warp's 16 rows), partial 64-chunks, splits that do not divide the chunk count and splits with no
// chunk at all, every token width (M = 1 … 64, padded to 16, 32 or 64). Skips without an SM 9.0 GPU.
#include <gtest/gtest.h>

#include <array>
#include <cstdlib>
#include <string>

#include "backends/cuda_decode/decode_tuning.hpp"
#include "backends/cuda_decode/sm90_wgmma_gemm.cuh"
#include "fp4gemm/error.hpp"
#include "fp4gemm/registry.hpp"
#include "gpu/gpu_test_support.hpp"

namespace fp4gemm::testing {
namespace {

constexpr double kRelativeTolerance = 1e-4;  // as in cuda_backend_correctness_test.cpp

// Sets an environment variable for one scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) { setenv(name, value.c_str(), 1); }
  ~ScopedEnv() { unsetenv(name_); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
};

std::optional<DeviceInfo> hopper_gpu() {
  const auto gpu = first_gpu();
  if (gpu && gpu->sm() == 90) return gpu;
  return std::nullopt;
}

// One case on fresh random operands; activation and output rows `*_stride` elements apart (0:
// packed). Returns the failures, empty when every element matches and nothing else was written.
std::string check_once(Backend& backend, const DeviceInfo& gpu, const GemmCase& c, TestStream& stream,
                       std::int64_t activation_stride = 0, std::int64_t output_stride = 0) {
  const std::uint64_t seed = fresh_seed();
  std::mt19937_64 rng(seed);
  const GemmOperands operands = make_operands(c, rng);
  const auto prepared = backend.prepare(operands.weight.view(), gpu);
  const DeviceActivation activation = upload_activation(operands, gpu.index, activation_stride);
  DeviceOutput out(c.m, c.n, c.output, gpu.index, output_stride);
  backend.run(activation.view, *prepared, operands.alpha, out.view(), {stream.get()});
  stream.synchronize();
  out.download();
  std::string failures = compare_with_reference(operands, out.values(), c.m, c.n, c.output, kRelativeTolerance);
  if (!out.only_elements_written()) failures += "wrote outside the output\n";
  return failures.empty() ? "" : c.to_string() + " seed " + std::to_string(seed) + "\n" + failures;
}

TEST(CudaDecodeWgmma, EveryCompiledShapeAndSplitMatchesTheReference) {
  const auto gpu = hopper_gpu();
  if (!gpu) GTEST_SKIP() << "needs an SM 9.0 GPU: " << (first_gpu() ? first_gpu()->to_string() : cuda_unavailable_reason());
  auto backend = make_backend("cuda_decode");
  TestStream stream;
  const ScopedEnv kernel("FP4GEMM_DECODE_KERNEL", "wgmma");
  int shapes_run = 0;
  // (warpgroups, splits, multicast); shapes this build does not run are skipped.
  const std::array<int, 3> shapes[] = {{1, 1, 1}, {1, 3, 1}, {1, 8, 1}, {2, 1, 1}, {2, 2, 1}, {2, 8, 1},
                                       {2, 1, 4}, {2, 2, 4}, {1, 1, 2}, {2, 3, 2}, {2, 1, 8}, {4, 1, 1}};
  // N = 7: one partial warp tile (and multicast groups of CTAs past N); 300: partial CTAs; 1100:
  // several multicast groups. K = 16, 80: fewer chunks than splits; 1040: a partial chunk;
  // 4160 = 65 chunks, which no split divides.
  const std::pair<std::int64_t, std::int64_t> sizes[] = {{7, 16}, {7, 80}, {300, 1040}, {300, 4160}, {1100, 1040}};
  for (const auto& [warpgroups, splits, multicast] : shapes) {
    for (std::int64_t m : {1, 9, 16, 17, 33, 64}) {
      const cuda_decode::WgmmaShape shape{m <= 16 ? 16 : m <= 32 ? 32 : 64, warpgroups, splits, multicast};
      if (!cuda_decode::is_compiled_wgmma_shape(shape)) continue;
      const std::string name = std::to_string(warpgroups) + ":" + std::to_string(splits) + ":" + std::to_string(multicast);
      const ScopedEnv forced("FP4GEMM_WGMMA_SHAPE", name);
      for (const auto& [n, k] : sizes) {
        const std::string failures = check_once(*backend, *gpu, {m, n, k, ActivationType::bf16, DType::f32}, stream);
        ASSERT_TRUE(failures.empty()) << "wgmma " << name << " " << failures;
      }
      ++shapes_run;
    }
  }
  EXPECT_GE(shapes_run, 50) << "fewer compiled shapes than expected";
}

TEST(CudaDecodeWgmma, EveryActivationAndOutputType) {
  const auto gpu = hopper_gpu();
  if (!gpu) GTEST_SKIP() << "needs an SM 9.0 GPU";
  auto backend = make_backend("cuda_decode");
  TestStream stream;
  const ScopedEnv kernel("FP4GEMM_DECODE_KERNEL", "wgmma");
  for (ActivationType activation : {ActivationType::bf16, ActivationType::nvfp4}) {
    for (DType output : {DType::f32, DType::bf16, DType::f16}) {
      for (std::int64_t m : {17, 40, 64}) {
        const std::string failures = check_once(*backend, *gpu, {m, 129, 4096, activation, output}, stream);
        ASSERT_TRUE(failures.empty()) << failures;
      }
    }
  }
}

// Activations whose rows are not 16-byte aligned (staged by a copy, then packed): a row stride of
// K + 3 elements with NaN between rows, and an output row stride of N + 5.
TEST(CudaDecodeWgmma, OddActivationAndOutputRowStrides) {
  const auto gpu = hopper_gpu();
  if (!gpu) GTEST_SKIP() << "needs an SM 9.0 GPU";
  auto backend = make_backend("cuda_decode");
  TestStream stream;
  const ScopedEnv kernel("FP4GEMM_DECODE_KERNEL", "wgmma");
  for (std::int64_t m : {3, 33, 64}) {
    const GemmCase c{m, 300, 1040, ActivationType::bf16, DType::bf16};
    const std::string failures = check_once(*backend, *gpu, c, stream, c.k + 3, c.n + 5);
    ASSERT_TRUE(failures.empty()) << failures;
  }
}

TEST(CudaDecodeWgmma, AShapeThisBuildDoesNotCompileIsAClearError) {
  const auto gpu = hopper_gpu();
  if (!gpu) GTEST_SKIP() << "needs an SM 9.0 GPU";
  auto backend = make_backend("cuda_decode");
  TestStream stream;
  const GemmCase c{40, 64, 64, ActivationType::bf16, DType::f32};
  std::mt19937_64 rng(fresh_seed());
  const GemmOperands operands = make_operands(c, rng);
  const auto prepared = backend->prepare(operands.weight.view(), *gpu);
  const DeviceActivation activation = upload_activation(operands, gpu->index);
  DeviceOutput out(c.m, c.n, c.output, gpu->index);
  const ScopedEnv forced("FP4GEMM_WGMMA_SHAPE", "3:2");
  EXPECT_THROW(backend->run(activation.view, *prepared, operands.alpha, out.view(), {stream.get()}), Error);
  stream.synchronize();
  out.download();
  EXPECT_TRUE(out.untouched());
}

}  // namespace
}  // namespace fp4gemm::testing
